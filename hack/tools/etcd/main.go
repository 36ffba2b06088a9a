// Command etcd is etcd's own server main (go.etcd.io/etcd/server/v3/etcdmain),
// built from its Go module for the rig. See hack/tools/build.sh.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
