// Package export_tiny_harness_plugin_completion: this plugin suggests no
// argument values.
package export_tiny_harness_plugin_completion

import . "wit_component/tiny_harness_plugin_types"

// Complete suggests nothing.
func Complete(command string, partialArguments string) []Suggestion {
	return nil
}
