// Command podprog is the container program of the host node's rig test:
// an HTTP server that shows what its process sees (files, environment,
// /etc/hosts, names it can dial) and exits when asked.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "", "address to serve on")
	name := flag.String("name", "", "what /name answers")
	flag.Parse()
	fmt.Printf("started pid=%d name=%s\n", os.Getpid(), *name)
	for _, k := range []string{"GREETING", "POD_NAME", "POD_IP", "HOSTNAME"} {
		fmt.Printf("env %s=%s\n", k, os.Getenv(k))
	}
	fmt.Fprintln(os.Stderr, "a line on stderr")

	mux := http.NewServeMux()
	mux.HandleFunc("/name", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, *name) })
	mux.HandleFunc("/pid", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, os.Getpid()) })
	mux.HandleFunc("/env", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, os.Getenv(r.FormValue("name"))) })
	mux.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) {
		data, err := os.ReadFile(r.FormValue("path"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.Write(data)
	})
	mux.HandleFunc("/dial", func(w http.ResponseWriter, r *http.Request) {
		// GET http://ADDR/name: ADDR's host is looked up in /etc/hosts
		c := &http.Client{Timeout: 5 * time.Second}
		res, err := c.Get("http://" + r.FormValue("addr") + "/name")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		io.Copy(w, res.Body)
	})
	mux.HandleFunc("/exit", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.FormValue("code"))
		fmt.Printf("exiting with %d\n", code)
		io.WriteString(w, "bye")
		w.(http.Flusher).Flush()
		go func() {
			time.Sleep(100 * time.Millisecond)
			os.Exit(code)
		}()
	})
	srv := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		fmt.Println("got SIGTERM")
		srv.Close()
	}()
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}
