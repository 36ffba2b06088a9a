package socks

import "strconv"

// Stage is the part of a connection's life in which it failed.
type Stage int

const (
	StageGreeting Stage = iota // reading the greeting and choosing a method
	StageRequest               // reading and checking the request
	StageDial                  // dialling the destination
	StageReply                 // writing the success reply
	StageRelay                 // copying between client and destination
	numStages
)

var stageNames = [numStages]string{
	StageGreeting: "greeting",
	StageRequest:  "request",
	StageDial:     "dial",
	StageReply:    "reply",
	StageRelay:    "relay",
}

func (s Stage) String() string {
	if s < 0 || s >= numStages {
		return "stage " + strconv.Itoa(int(s))
	}
	return stageNames[s]
}

// ConnError is why ServeConn ended a connection.
type ConnError struct {
	Stage Stage
	Dest  string // the destination, "host:port", once the request is read
	Err   error
}

func (e *ConnError) Error() string {
	s := "socks: " + e.Stage.String()
	if e.Dest != "" {
		s += " " + e.Dest
	}
	return s + ": " + e.Err.Error()
}

func (e *ConnError) Unwrap() error { return e.Err }
