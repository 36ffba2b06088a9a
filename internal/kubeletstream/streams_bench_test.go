package kubeletstream

import (
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/httpstream"
)

// BenchmarkForwardStreamsMemory opens 2,000 port-forward streams at once,
// in 8 sessions of 250 (sluice-vk's session bound; 4 namespaces of 2 pods), each sending 32 KiB
// to a job's server that answers nothing, through the srun carrier (9
// slots): what a tenant who opens streams without end costs sluice-vk.
// It reports the heap held with the streams open (the clients' ends live
// in the same process and are counted too) and the streams refused.
//
//	go test -run '^$' -bench ForwardStreamsMemory -benchtime 1x ./internal/kubeletstream/
func BenchmarkForwardStreamsMemory(b *testing.B) {
	const sessions, perSession = 8, 250
	s, _ := srunServer(b)
	srv := kubeletAPI(b, s)
	port := silentJob(b)
	upload := make([]byte, 32<<10)
	for range b.N {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		var mu sync.Mutex
		var refused int
		var wg sync.WaitGroup
		var conns []httpstream.Connection
		for i := range sessions {
			conn := forwardConn(b, srv, "ns"+strconv.Itoa(i%4), "pod"+strconv.Itoa(i/4))
			conns = append(conns, conn)
			for j := range perSession {
				data, errs, err := tryForwardStream(conn, j, port)
				if err != nil {
					refused++ // reset by the server as it refused it
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, _ = data.Write(upload)
					select {
					case msg := <-errs:
						if msg != "" {
							mu.Lock()
							refused++
							mu.Unlock()
						}
					case <-time.After(3 * time.Second):
					}
				}()
			}
		}
		wg.Wait()
		runtime.GC()
		var during runtime.MemStats
		runtime.ReadMemStats(&during)
		b.ReportMetric(float64(int64(during.HeapInuse)-int64(before.HeapInuse))/(1<<20), "MiB-heap")
		b.ReportMetric(float64(refused), "refused")
		b.ReportMetric(float64(runtime.NumGoroutine()), "goroutines")
		for _, c := range conns {
			c.Close()
		}
	}
}
