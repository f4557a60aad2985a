// The Pod sandbox's process: holds the Pod's namespaces, reaps orphans, exits on
// SIGINT/SIGTERM. Built here because no registry is reachable to pull registry.k8s.io/pause.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s == syscall.SIGCHLD {
			for {
				var ws syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
			continue
		}
		os.Exit(0)
	}
}
