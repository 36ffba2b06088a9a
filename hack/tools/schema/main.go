// Command schema writes the `config` subtree of the chart's values schema
// from the configuration's Go types (config.ChartSchema), leaving the
// chart's own values as they are written:
//
//	go run ./hack/tools/schema -chart charts/sluice/values.schema.json
//
// `go generate ./internal/config/` and `make schema` run it; the config
// package's TestChartSchemaMatchesTypes fails when the file is stale.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/sluice-hpc/sluice/internal/config"
)

func main() {
	chart := flag.String("chart", "charts/sluice/values.schema.json", "the chart's values schema, rewritten in place")
	flag.Parse()
	if err := write(*chart); err != nil {
		fmt.Fprintln(os.Stderr, "schema:", err)
		os.Exit(1)
	}
}

func write(file string) error {
	old, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	out, err := config.ChartSchema(old)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return os.WriteFile(file, out, 0o644)
}
