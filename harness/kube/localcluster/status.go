package localcluster

import (
	"context"
	"errors"
	"fmt"
)

var errNotUp = errors.New("no cluster is recorded: run make kube-up")

// Load imports o.Images into the running cluster's containerd.
func Load(ctx context.Context, o Options) error {
	rec, err := loadRecord(o.RecordFile())
	if err != nil {
		return err
	}
	if rec == nil {
		return errNotUp
	}
	if len(o.Images) == 0 {
		return errors.New("no image given")
	}
	return ImportImages(ctx, rec.layout(), o.Images, o.Log)
}

// Status prints each recorded component, whether it runs, and its RSS.
func Status(o Options) error {
	rec, err := loadRecord(o.RecordFile())
	if err != nil {
		return err
	}
	if rec == nil {
		return errNotUp
	}
	total := 0.0
	for _, p := range rec.Procs {
		state := "stopped"
		rss := 0.0
		if p.ours() {
			state, rss = "running", RSS(p.PID)
		}
		total += rss
		fmt.Fprintf(o.Log, "%-24s pid %-7d %-8s %6.0f MiB\n", p.Name, p.PID, state, rss)
	}
	fmt.Fprintf(o.Log, "%-24s %24.0f MiB\n", "total", total)
	return nil
}
