// Command etcd is the stock etcd server (go.etcd.io/etcd/server/v3, version
// pinned in go.mod), built by hack/build-etcd.sh into _output/bin/etcd for the
// storage benchmarks and e2e tests. It takes etcd's usual flags.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
