package socks

import (
	"errors"
	"fmt"
	"io"
	"slices"
)

// Authentication methods.
const (
	methodNoAuth       = 0x00 // NO AUTHENTICATION REQUIRED
	methodNoAcceptable = 0xFF // NO ACCEPTABLE METHODS
)

// Greetings the server refuses.
var (
	// errNoAcceptableMethod: the greeting does not offer NO AUTHENTICATION
	// REQUIRED.
	errNoAcceptableMethod = errors.New("no acceptable authentication method")
	// errVersion: the greeting is not a SOCKS5 one.
	errVersion = errors.New("not a SOCKS5 greeting")
)

// negotiate reads the client's greeting (VER NMETHODS METHODS) and answers
// it: with NO AUTHENTICATION REQUIRED when the client offers it, else with
// NO ACCEPTABLE METHODS and errNoAcceptableMethod. A greeting of another
// version is not answered (errVersion): the client does not speak SOCKS5.
func negotiate(rw io.ReadWriter) error {
	var buf [255]byte
	if _, err := io.ReadFull(rw, buf[:2]); err != nil {
		return err
	}
	if buf[0] != version5 {
		return fmt.Errorf("%w: version %d", errVersion, buf[0])
	}
	methods := buf[:buf[1]]
	if _, err := io.ReadFull(rw, methods); err != nil {
		return noEOF(err)
	}
	if !slices.Contains(methods, methodNoAuth) {
		if _, err := rw.Write([]byte{version5, methodNoAcceptable}); err != nil {
			return fmt.Errorf("%w (offered [% x]): write answer: %w", errNoAcceptableMethod, methods, err)
		}
		return fmt.Errorf("%w (offered [% x])", errNoAcceptableMethod, methods)
	}
	if _, err := rw.Write([]byte{version5, methodNoAuth}); err != nil {
		return fmt.Errorf("write method: %w", err)
	}
	return nil
}
