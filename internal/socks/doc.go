// Package socks is a small SOCKS5 server (RFC 1928): the subset a tunnel
// needs to carry TCP connections to destinations the client names.
//
// It supports the NO AUTHENTICATION REQUIRED method only, and the CONNECT
// command only, to IPv4 and IPv6 addresses and to host names. BIND and UDP
// ASSOCIATE are answered with "command not supported"; a client that does
// not offer NO AUTHENTICATION REQUIRED is answered with "no acceptable
// methods". Every read is bounded by the protocol: a request is at most 262
// bytes, and the server reads no byte past it before the relay starts.
//
// The server decides nothing about which destinations are allowed: that is
// the job of its Dial function, which sees every destination before any
// connection is made (see ErrNotAllowed). Without authentication, anyone who
// can reach the listener can use it, so the listener's reach is the
// caller's to limit.
//
// A Server is usable as its zero value:
//
//	var s socks.Server
//	err := s.Serve(ctx, ln)
package socks
