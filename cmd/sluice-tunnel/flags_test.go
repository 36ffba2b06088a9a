package main

import (
	"errors"
	"flag"
	"log/slog"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/tunnel"
)

// common are valid values of the flags both modes share.
var common = map[string]string{
	"login":             "10.251.1.2:2222",
	"user":              "alice",
	"key":               "/etc/sluice/ssh/ssh-privatekey",
	"login-known-hosts": "/etc/sluice/login-hosts/known_hosts",
	"node-known-hosts":  "/etc/sluice/node-hosts/known_hosts",
	"node-file":         "/etc/sluice/node/node",
}

// argv builds a command line from the common flags, the mode's flags, and
// changes: a value replaces a flag, "-" drops it. extra is appended as is.
func argv(mode map[string]string, changes map[string]string, extra ...string) []string {
	all := map[string]string{}
	for k, v := range common {
		all[k] = v
	}
	for k, v := range mode {
		all[k] = v
	}
	for k, v := range changes {
		all[k] = v
	}
	var args []string
	for k, v := range all {
		if v != "-" {
			args = append(args, "--"+k+"="+v)
		}
	}
	sort.Strings(args)
	return append(args, extra...)
}

var (
	forwardFlags = map[string]string{"target": "node", "ports": "8080,9090", "listen": "127.80.0.5", "metrics": "127.80.0.5:9464"}
	reverseFlags = map[string]string{"socket-dir": "/tmp/sluice-sock/0b5e3c0e-7a52-4c8e-9d55-7f2a0a4f3c11", "forward": "6379=redis.default:6379", "metrics": "127.80.0.5:9465"}
)

func TestParseArgsForward(t *testing.T) {
	c, err := parseArgs(modeForward, argv(forwardFlags, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := &config{
		mode:            modeForward,
		login:           "10.251.1.2:2222",
		user:            "alice",
		keyFile:         "/etc/sluice/ssh/ssh-privatekey",
		loginKnownHosts: "/etc/sluice/login-hosts/known_hosts",
		nodeKnownHosts:  "/etc/sluice/node-hosts/known_hosts",
		nodeFile:        "/etc/sluice/node/node",
		nodePort:        22,
		metrics:         "127.80.0.5:9464",
		logFormat:       "json",
		logLevel:        slog.LevelInfo,
		access:          accessFlags{windowMax: defaultWindowMax},
		target:          tunnel.TargetNode,
		ports:           []int{8080, 9090},
		listen:          "127.80.0.5",
		bounds: forwardBounds{
			maxConns:     tunnel.DefaultMaxConns,
			maxStalled:   tunnel.DefaultMaxStalled,
			idleTimeout:  tunnel.DefaultIdleTimeout,
			stallTimeout: tunnel.DefaultStallTimeout,
		},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("parseArgs = %+v\nwant %+v", c, want)
	}
}

func TestParseArgsForwardDefaults(t *testing.T) {
	c, err := parseArgs(modeForward, argv(map[string]string{"ports": "8080"}, map[string]string{"login": "login.example"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.login != "login.example:22" || c.target != tunnel.TargetNode || c.listen != "" || c.metrics != "" ||
		c.nodePort != 22 || c.logFormat != "json" || c.logLevel != slog.LevelInfo {
		t.Errorf("defaults: %+v", c)
	}
}

func TestParseArgsForwardOptions(t *testing.T) {
	c, err := parseArgs(modeForward, argv(forwardFlags,
		map[string]string{"target": "login", "node-port": "2022", "log-format": "text", "log-level": "debug", "ports": "8080", "listen": "-"},
		"--ports=9090"))
	if err != nil {
		t.Fatal(err)
	}
	if c.target != tunnel.TargetLogin || c.nodePort != 2022 || c.logFormat != "text" || c.logLevel != slog.LevelDebug ||
		!equalInts(c.ports, []int{8080, 9090}) {
		t.Errorf("options: %+v", c)
	}
	c, err = parseArgs(modeForward, argv(forwardFlags, map[string]string{"entry-dir-file": "/etc/sluice/node/socket-dir"}))
	if err != nil || c.entry != "/etc/sluice/node/socket-dir" {
		t.Errorf("--entry-dir-file: %+v, %v", c, err)
	}
	_, err = parseArgs(modeForward, argv(forwardFlags, map[string]string{"entry-dir-file": "/etc/sluice/node/socket-dir", "target": "login"}))
	if err == nil || !strings.Contains(err.Error(), "--entry-dir-file") {
		t.Errorf("--entry-dir-file with --target=login: got %v; want an error naming the flag", err)
	}
	// The metrics port equals a forwarded port, but on another address.
	c, err = parseArgs(modeForward, argv(forwardFlags, map[string]string{"metrics": "127.0.0.1:8080", "listen": "127.80.0.5"}))
	if err != nil || c.metrics != "127.0.0.1:8080" {
		t.Errorf("metrics on another address than the forward: %+v, %v", c, err)
	}
}

func TestParseArgsForwardBounds(t *testing.T) {
	c, err := parseArgs(modeForward, argv(forwardFlags, nil, "--max-conns=64", "--max-stalled=0", "--idle-timeout=10m", "--stall-timeout=0"))
	if err != nil {
		t.Fatal(err)
	}
	want := forwardBounds{maxConns: 64, idleTimeout: 10 * time.Minute}
	if c.bounds != want {
		t.Errorf("bounds = %+v; want %+v", c.bounds, want)
	}
	// A flag's 0 is no limit, which the tunnel spells negative (its zero
	// is the default).
	f := newForward(c, &tunnel.Hop{}, slog.Default(), nil, nil)
	if f.MaxConns != 64 || f.MaxStalled >= 0 || f.IdleTimeout != 10*time.Minute || f.StallTimeout >= 0 {
		t.Errorf("forward limits = %d, %d, %v, %v; want 64, none, 10m, none", f.MaxConns, f.MaxStalled, f.IdleTimeout, f.StallTimeout)
	}
}

func TestParseArgsReverse(t *testing.T) {
	c, err := parseArgs(modeReverse, argv(reverseFlags, nil, "--forward=9000=minio.default:9000", "--forward=8443=[fd00::1]:443"))
	if err != nil {
		t.Fatal(err)
	}
	want := []tunnel.Endpoint{
		{ListenPort: 6379, Host: "redis.default", Port: 6379},
		{ListenPort: 9000, Host: "minio.default", Port: 9000},
		{ListenPort: 8443, Host: "fd00::1", Port: 443},
	}
	if c.mode != modeReverse || c.socketDir != reverseFlags["socket-dir"] || !reflect.DeepEqual(c.endpoints, want) ||
		c.metrics != "127.80.0.5:9465" || c.login != "10.251.1.2:2222" || c.target != "" || c.ports != nil {
		t.Errorf("parseArgs = %+v; want endpoints %+v", c, want)
	}
}

func TestParseArgsReverseSocks(t *testing.T) {
	c, err := parseArgs(modeReverse, argv(reverseFlags, map[string]string{"forward": "-"}, "--socks-port=1080"))
	if err != nil || c.socksPort != 1080 || len(c.endpoints) != 0 {
		t.Errorf("SOCKS only: %+v, %v; want socks port 1080 and no forward", c, err)
	}
	c, err = parseArgs(modeReverse, argv(reverseFlags, nil, "--socks-port=1080"))
	if err != nil || c.socksPort != 1080 || len(c.endpoints) != 1 || c.sshd != tunnel.SshdNode || c.sshdPath != "/usr/sbin/sshd" {
		t.Errorf("forward and SOCKS: %+v, %v", c, err)
	}
	c, err = parseArgs(modeReverse, argv(reverseFlags, nil, "--sshd=userspace", "--sshd-path=/opt/openssh/sbin/sshd"))
	if err != nil || c.sshd != tunnel.SshdUserspace || c.sshdPath != "/opt/openssh/sbin/sshd" {
		t.Errorf("userspace sshd: %+v, %v", c, err)
	}
}

func TestParseArgsRefuses(t *testing.T) {
	long := "/tmp/" + strings.Repeat("d", 100)
	for _, tc := range []struct {
		name    string
		mode    string
		changes map[string]string
		extra   []string
		want    []string // each must be in the error
	}{
		// Flags of both modes.
		{"no login", modeForward, map[string]string{"login": "-"}, nil, []string{"--login is required"}},
		{"login host", modeForward, map[string]string{"login": "log in:22"}, nil, []string{`--login: "log in:22": host "log in" is not a host name or an IP address`}},
		{"login port", modeReverse, map[string]string{"login": "login:ssh"}, nil, []string{`--login: "login:ssh": port "ssh" is not a decimal number`}},
		{"login colons", modeForward, map[string]string{"login": "a:b:c"}, nil, []string{"--login: \"a:b:c\": want HOST:PORT"}},
		{"no user", modeForward, map[string]string{"user": "-"}, nil, []string{"--user is required"}},
		{"user space", modeForward, map[string]string{"user": "al ice"}, nil, []string{`--user: "al ice" holds a space`}},
		{"user option", modeReverse, map[string]string{"user": "-oProxyCommand=x"}, nil, []string{`--user: "-oProxyCommand=x" starts with '-'`}},
		{"user control", modeForward, map[string]string{"user": "al\x01ice"}, nil, []string{"--user:", "control character"}},
		{"user long", modeForward, map[string]string{"user": strings.Repeat("a", 257)}, nil, []string{"--user: longer than 256 bytes"}},
		{"no key", modeForward, map[string]string{"key": "-"}, nil, []string{"--key is required"}},
		{"no login known hosts", modeReverse, map[string]string{"login-known-hosts": "-"}, nil, []string{"--login-known-hosts is required"}},
		{"no node known hosts", modeForward, map[string]string{"node-known-hosts": "-"}, nil, []string{"--node-known-hosts is required"}},
		{"no node file", modeReverse, map[string]string{"node-file": "-"}, nil, []string{"--node-file is required"}},
		{"node port zero", modeForward, map[string]string{"node-port": "0"}, nil, []string{`invalid value "0" for flag -node-port: port "0" is not in 1-65535`}},
		{"node port hex", modeForward, map[string]string{"node-port": "0x16"}, nil, []string{"-node-port", "not a decimal number"}},
		{"node port big", modeReverse, map[string]string{"node-port": "65536"}, nil, []string{"-node-port", "not in 1-65535"}},
		{"metrics host name", modeForward, map[string]string{"metrics": "localhost:9464"}, nil, []string{`--metrics: "localhost:9464": address "localhost" is not an IP address`}},
		{"metrics no port", modeReverse, map[string]string{"metrics": "127.0.0.1"}, nil, []string{`--metrics: "127.0.0.1": want ADDR:PORT`}},
		{"metrics port zero", modeForward, map[string]string{"metrics": "127.0.0.1:0"}, nil, []string{"--metrics:", "not in 1-65535"}},
		{"log format", modeForward, map[string]string{"log-format": "xml"}, nil, []string{`--log-format: "xml": want json or text`}},
		{"log level", modeReverse, map[string]string{"log-level": "loud"}, nil, []string{`--log-level: "loud": want debug, info, warn or error`}},
		{"unexpected argument", modeForward, nil, []string{"extra"}, []string{`unexpected argument "extra"`}},
		{"undefined flag", modeForward, nil, []string{"--verbose"}, []string{"flag provided but not defined: -verbose"}},
		{"several at once", modeForward, map[string]string{"user": "-", "key": "-", "ports": "-"}, nil,
			[]string{"--user is required", "--key is required", "--ports is required"}},

		// forward
		{"target", modeForward, map[string]string{"target": "compute"}, nil, []string{`--target: "compute": want node or login`}},
		{"no ports", modeForward, map[string]string{"ports": "-"}, nil, []string{"--ports is required"}},
		{"ports empty", modeForward, map[string]string{"ports": ""}, nil, []string{"-ports: no port given"}},
		{"ports malformed", modeForward, map[string]string{"ports": "80,http"}, nil, []string{`invalid value "80,http" for flag -ports: port "http" is not a decimal number`}},
		{"ports repeat", modeForward, map[string]string{"ports": "80,80"}, nil, []string{"-ports: port 80 is listed twice"}},
		{"ports repeat across flags", modeForward, map[string]string{"ports": "80"}, []string{"--ports=81,80"}, []string{"--ports: port 80 is listed twice"}},
		{"listen host name", modeForward, map[string]string{"listen": "localhost"}, nil, []string{`--listen: address "localhost" is not an IP address`}},
		{"listen with port", modeForward, map[string]string{"listen": "127.0.0.1:80"}, nil, []string{"--listen:", "not an IP address"}},
		{"metrics on a forwarded port", modeForward, map[string]string{"metrics": "127.80.0.5:9090"}, nil, []string{"--metrics: port 9090 is also a forwarded port"}},
		{"metrics on all addresses and a forwarded port", modeForward, map[string]string{"metrics": ":8080"}, nil, []string{"--metrics: port 8080 is also a forwarded port"}},
		{"forward on all addresses and the metrics port", modeForward, map[string]string{"listen": "-", "metrics": "127.0.0.1:8080"}, nil, []string{"--metrics: port 8080 is also a forwarded port"}},
		{"max conns negative", modeForward, nil, []string{"--max-conns=-1"}, []string{"--max-conns: must not be negative"}},
		{"max stalled negative", modeForward, nil, []string{"--max-stalled=-3"}, []string{"--max-stalled: must not be negative"}},
		{"idle timeout negative", modeForward, nil, []string{"--idle-timeout=-1s"}, []string{"--idle-timeout: must not be negative"}},
		{"stall timeout negative", modeForward, nil, []string{"--stall-timeout=-1s"}, []string{"--stall-timeout: must not be negative"}},
		{"stall timeout unit", modeForward, nil, []string{"--stall-timeout=30"}, []string{`invalid value "30" for flag -stall-timeout`}},
		{"max conns in reverse", modeReverse, nil, []string{"--max-conns=5"}, []string{"flag provided but not defined: -max-conns"}},
		{"socket dir in forward", modeForward, nil, []string{"--socket-dir=/tmp/x"}, []string{"flag provided but not defined: -socket-dir"}},
		{"forward in forward", modeForward, nil, []string{"--forward=1=a:1"}, []string{"flag provided but not defined: -forward"}},

		// reverse
		{"no socket dir", modeReverse, map[string]string{"socket-dir": "-"}, nil, []string{"--socket-dir or --socket-dir-file is required"}},
		{"socket dir and its file", modeReverse, nil, []string{"--socket-dir-file=/etc/sluice/node/socket-dir"}, []string{"--socket-dir and --socket-dir-file exclude each other"}},
		{"socket dir relative", modeReverse, map[string]string{"socket-dir": "sock/uid"}, nil, []string{`--socket-dir: "sock/uid" is not an absolute path`}},
		{"socket dir unclean", modeReverse, map[string]string{"socket-dir": "/tmp//uid/"}, nil, []string{`--socket-dir: "/tmp//uid/" is not a clean path (want "/tmp/uid")`}},
		{"socket dir dots", modeReverse, map[string]string{"socket-dir": "/tmp/sock/../uid"}, nil, []string{"--socket-dir:", "not a clean path"}},
		{"socket dir root", modeReverse, map[string]string{"socket-dir": "/"}, nil, []string{"--socket-dir: the root directory"}},
		{"socket dir space", modeReverse, map[string]string{"socket-dir": "/tmp/a b"}, nil, []string{`--socket-dir: "/tmp/a b" holds a space`}},
		{"socket dir newline", modeReverse, map[string]string{"socket-dir": "/tmp/a\nb"}, nil, []string{"--socket-dir:", "control character"}},
		{"socket dir long", modeReverse, map[string]string{"socket-dir": long}, nil, []string{"--socket-dir:", "too long", "107-byte limit"}},
		{"no forward", modeReverse, map[string]string{"forward": "-"}, nil, []string{"--forward is required"}},
		{"forward annotation syntax", modeReverse, map[string]string{"forward": "6379:redis:6379"}, nil, []string{`invalid value "6379:redis:6379" for flag -forward: "6379:redis:6379": want LISTENPORT=HOST:PORT`}},
		{"forward host", modeReverse, map[string]string{"forward": "6379=re;dis:6379"}, nil, []string{"-forward:", `host "re;dis" is not a host name`}},
		{"forward listen port repeats", modeReverse, nil, []string{"--forward=6379=redis.other:6379"}, []string{"--forward: listen port 6379 is listed twice"}},
		{"socks port is a listen port", modeReverse, nil, []string{"--socks-port=6379"}, []string{"--socks-port: 6379 is also the listen port of --forward 6379=redis.default:6379"}},
		{"socks port out of range", modeReverse, nil, []string{"--socks-port=70000"}, []string{"-socks-port"}},
		{"socks port in forward", modeForward, nil, []string{"--socks-port=1080"}, []string{"flag provided but not defined: -socks-port"}},
		{"sshd mode", modeReverse, nil, []string{"--sshd=root"}, []string{`--sshd: "root": want node or userspace`}},
		{"node exec", modeReverse, nil, []string{"--node-exec=pdsh"}, []string{`--node-exec: "pdsh": want ssh or srun`}},
		{"srun without job file", modeReverse, nil, []string{"--node-exec=srun"}, []string{"--job-file is required with --node-exec=srun"}},
		{"sshd path", modeReverse, nil, []string{"--sshd-path=sshd"}, []string{`--sshd-path: "sshd" is not a clean absolute path`}},
		{"target in reverse", modeReverse, nil, []string{"--target=node"}, []string{"flag provided but not defined: -target"}},
		{"ports in reverse", modeReverse, nil, []string{"--ports=80"}, []string{"flag provided but not defined: -ports"}},
		{"listen in reverse", modeReverse, nil, []string{"--listen=127.0.0.1"}, []string{"flag provided but not defined: -listen"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flags := forwardFlags
			if tc.mode == modeReverse {
				flags = reverseFlags
			}
			c, err := parseArgs(tc.mode, argv(flags, tc.changes, tc.extra...))
			if err == nil {
				t.Fatalf("parseArgs accepted it: %+v", c)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q; want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestParseArgsHelp(t *testing.T) {
	for _, mode := range []string{modeForward, modeReverse} {
		for _, h := range []string{"-h", "--help"} {
			if _, err := parseArgs(mode, []string{h}); !errors.Is(err, flag.ErrHelp) {
				t.Errorf("parseArgs(%s, %s) = %v; want flag.ErrHelp", mode, h, err)
			}
		}
	}
}
