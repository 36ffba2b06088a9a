// Command sluice-probe is the rig's client inside a job's container: it
// does what a workload does through the reverse tunnel and prints one line
// saying what happened. The rig builds it static into its busybox image
// (hack/rig/lib/image.sh), which has no TLS client of its own.
//
//	sluice-probe tls --url URL --ca FILE
//	    GET URL over TLS verified against the CA in FILE alone, the host
//	    name included: "tls ok: <certificate subject> <HTTP status> <body>".
//	sluice-probe redis --addr HOST:PORT [--v4mapped | --socks PROXY]
//	    send PING, print "redis HOST:PORT says +PONG"; with --v4mapped the
//	    IPv4 address HOST resolves to is dialled over IPv6 as ::ffff:a.b.c.d,
//	    as a JVM does by default; with --socks, HOST:PORT is asked of the
//	    SOCKS5 proxy at PROXY (host:port), which resolves HOST.
//
// It exits 1 on failure, after printing "failed: <why>".
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/proxy"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: sluice-probe tls|redis [flags]")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out string
	var err error
	switch os.Args[1] {
	case "tls":
		fs := flag.NewFlagSet("tls", flag.ExitOnError)
		url := fs.String("url", "", "https URL to GET")
		ca := fs.String("ca", "", "PEM file of the only CA to trust")
		fs.Parse(os.Args[2:])
		out, err = probeTLS(ctx, *url, *ca)
	case "redis":
		fs := flag.NewFlagSet("redis", flag.ExitOnError)
		addr := fs.String("addr", "", "host:port of the Redis server")
		mapped := fs.Bool("v4mapped", false, "dial the IPv4 address over IPv6, v4-mapped")
		socks := fs.String("socks", "", "host:port of a SOCKS5 proxy to go through")
		fs.Parse(os.Args[2:])
		if *mapped && *socks != "" {
			fmt.Fprintln(os.Stderr, "sluice-probe redis: --v4mapped and --socks exclude each other")
			os.Exit(2)
		}
		out, err = probeRedis(ctx, *addr, *mapped, *socks)
	default:
		fmt.Fprintf(os.Stderr, "sluice-probe: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
	if err != nil {
		fmt.Println("failed:", err)
		os.Exit(1)
	}
	fmt.Println(out)
}

func probeTLS(ctx context.Context, url, caFile string) (string, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return "", err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return "", fmt.Errorf("no certificate in %s", caFile)
	}
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 200))
	if err != nil {
		return "", err
	}
	subject := resp.TLS.PeerCertificates[0].Subject.String()
	return fmt.Sprintf("tls ok: %s %s %s", subject, resp.Status, strings.Join(strings.Fields(string(body)), " ")), nil
}

func probeRedis(ctx context.Context, addr string, mapped bool, socks string) (string, error) {
	target := addr
	if mapped {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return "", err
		}
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip4", host)
		if err != nil {
			return "", err
		}
		if len(ips) == 0 {
			return "", errors.New("no IPv4 address for " + host)
		}
		p, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			return "", fmt.Errorf("port %q: %w", port, err)
		}
		target = netip.AddrPortFrom(netip.AddrFrom16(ips[0].As16()), uint16(p)).String()
	}
	var c net.Conn
	var err error
	switch {
	case socks != "":
		d, derr := proxy.SOCKS5("tcp", socks, nil, &net.Dialer{})
		if derr != nil {
			return "", derr
		}
		c, err = d.(proxy.ContextDialer).DialContext(ctx, "tcp", target)
	case mapped:
		c, err = dialMapped(target)
	default:
		var d net.Dialer
		c, err = d.DialContext(ctx, "tcp", target)
	}
	if err != nil {
		return "", err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	if _, err := io.WriteString(c, "PING\r\n"); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("no answer from %s: %w", target, err)
	}
	return fmt.Sprintf("redis %s says %s", target, strings.TrimSpace(line)), nil
}

// dialMapped connects an IPv6 socket to target, a v4-mapped address: the
// net package would dial such an address over IPv4.
func dialMapped(target string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(target)
	if err != nil {
		return nil, err
	}
	fd, err := syscall.Socket(syscall.AF_INET6, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	f := os.NewFile(uintptr(fd), "tcp6")
	defer f.Close()
	sa := &syscall.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	if err := syscall.Connect(fd, sa); err != nil {
		return nil, fmt.Errorf("connect %s over IPv6: %w", target, err)
	}
	return net.FileConn(f)
}
