package site

import (
	"context"
	"testing"
	"time"
)

func TestActivityRecordsInFlight(t *testing.T) {
	var a Activity
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	end := a.begin(ctx, "squeue")
	got := a.InFlight()
	if len(got) != 1 || got[0].Name != "squeue" || got[0].Deadline.IsZero() {
		t.Fatalf("in flight: got %+v; want one squeue with a deadline", got)
	}
	end()
	if got := a.InFlight(); len(got) != 0 {
		t.Errorf("after its end: got %+v; want none in flight", got)
	}
	var none *Activity
	none.begin(ctx, "x")()
	if none.InFlight() != nil {
		t.Error("a nil Activity reported commands")
	}
}

func TestOverdue(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	grace, maxAge := time.Minute, 10*time.Minute
	for _, tt := range []struct {
		name string
		cmds []Command
		now  time.Time
		want string // the overdue command's name; "" for none
	}{
		{"none", nil, t0, ""},
		{"within its deadline", []Command{{Name: "sbatch", Started: t0, Deadline: t0.Add(5 * time.Minute)}}, t0.Add(4 * time.Minute), ""},
		{"past its deadline, within the grace", []Command{{Name: "sbatch", Started: t0, Deadline: t0.Add(5 * time.Minute)}}, t0.Add(5*time.Minute + 30*time.Second), ""},
		{"past deadline and grace", []Command{{Name: "sbatch", Started: t0, Deadline: t0.Add(5 * time.Minute)}}, t0.Add(7 * time.Minute), "sbatch"},
		{"no deadline, young", []Command{{Name: "squeue", Started: t0}}, t0.Add(9 * time.Minute), ""},
		{"no deadline, too old", []Command{{Name: "squeue", Started: t0}}, t0.Add(11 * time.Minute), "squeue"},
		{"the latest of two", []Command{
			{Name: "scancel", Started: t0, Deadline: t0.Add(time.Minute)},
			{Name: "squeue", Started: t0},
		}, t0.Add(11 * time.Minute), "scancel"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, by, ok := Overdue(tt.cmds, tt.now, grace, maxAge)
			if got := map[bool]string{true: c.Name}[ok]; got != tt.want {
				t.Errorf("got %q (late by %v); want %q", got, by, tt.want)
			}
		})
	}
}
