//go:build bench

package main

import "github.com/sluice-hpc/sluice/bench/internal/echo"

// The job server's protocol: the client's first byte chooses what the
// connection does, until either side closes it.
const (
	// opDownload: the server writes data without end (throughput, node to client).
	opDownload = 'D'
	// opUpload: the server reads and discards everything (throughput, client to node).
	opUpload = 'U'
	// opEcho: the server writes back every byte it reads (connection set-up:
	// one byte sent and echoed).
	opEcho = echo.Op
	// opPing: the server answers each pingSize-byte request with pingSize
	// bytes (requests per second).
	opPing = 'P'
)

// pingSize is the size of a request and of its answer.
const pingSize = 64

// chunk is the size of the buffers the throughput streams write.
const chunk = 32 << 10
