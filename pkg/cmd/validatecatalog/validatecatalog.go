// Package validatecatalog is the `olm-apiserver validate-catalog DIR`
// command: it checks a File-Based Catalog directory the way the server does
// before serving it (pkg/fbc) and prints what it finds.
package validatecatalog

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/olm-apiserver/olm-apiserver/pkg/fbc"
)

// NewCommand returns the validate-catalog command. It prints every error and
// warning (one per line: file, blob, rule, message) and a summary to stdout.
// It returns an error, which makes the root command exit 1, when the catalog
// has errors (the server would not serve it) or DIR cannot be read; warnings
// alone succeed.
func NewCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "validate-catalog DIR",
		Short: "Check a File-Based Catalog directory as the server does before serving it",
		Long: `Reads every JSON and YAML file under DIR (honouring .indexignore files), then
prints the errors that would stop the catalog from being served (a blob without
schema, a missing required field, a bundle without exactly one valid olm.package
property) and the warnings that would not (duplicate blobs or versions, a bundle
twice in a channel, several channel heads, bad or too wide skipRanges).
Exits 1 when there are errors.`,
		Args:         cobra.ExactArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return Run(cmd.OutOrStdout(), args[0])
		},
	}
}

// Run validates the catalog in dir and writes the report to out. It returns
// an error when dir is not a readable directory or the catalog has errors.
func Run(out io.Writer, dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	var blobs, packages int
	report, err := fbc.Load(os.DirFS(dir), func(m fbc.Meta, _ fbc.Source) error {
		blobs++
		if m.Schema == fbc.SchemaPackage {
			packages++
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading catalog %s: %w", dir, err)
	}
	for _, p := range report.Errors {
		fmt.Fprintf(out, "error: %s\n", p)
	}
	for _, p := range report.Warnings {
		fmt.Fprintf(out, "warning: %s\n", p)
	}
	fmt.Fprintf(out, "%s: %d blobs, %d packages, %d errors, %d warnings\n", dir, blobs, packages, len(report.Errors), len(report.Warnings))
	if len(report.Errors) > 0 {
		return fmt.Errorf("catalog %s has %d errors and would not be served", dir, len(report.Errors))
	}
	return nil
}
