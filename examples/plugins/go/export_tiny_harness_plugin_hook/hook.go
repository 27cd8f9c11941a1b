// Package export_tiny_harness_plugin_hook is the hook executor: a
// command.invoked.pre policy that refuses /echo with the word "forbidden".
package export_tiny_harness_plugin_hook

import (
	"encoding/json"
	"strings"

	. "wit_component/tiny_harness_plugin_types"
)

// The part of the command.invoked context the policy reads.
type invokedContext struct {
	Command *struct {
		Name         *string `json:"name"`
		RawArguments *string `json:"raw_arguments"`
	} `json:"command"`
}

// Handle decides on the hook point with its JSON context.
func Handle(point string, context string) Decision {
	if point != "command.invoked.pre" {
		return MakeDecisionPass()
	}
	var parsed invokedContext
	err := json.Unmarshal([]byte(context), &parsed)
	if err != nil || parsed.Command == nil || parsed.Command.Name == nil ||
		parsed.Command.RawArguments == nil {
		return abort(AbortReason_Invalid, "echo policy: malformed command.invoked context")
	}
	if *parsed.Command.Name == "echo" && hasForbiddenWord(*parsed.Command.RawArguments) {
		return abort(AbortReason_Policy, "echo refuses forbidden words")
	}
	return MakeDecisionPass()
}

func abort(reason AbortReason, message string) Decision {
	return MakeDecisionAbort(Abort{Reason: reason, Message: message})
}

// hasForbiddenWord: "forbidden" as a word of ASCII letters and digits,
// case-insensitive.
func hasForbiddenWord(text string) bool {
	words := strings.FieldsFunc(text, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	})
	for _, word := range words {
		if strings.EqualFold(word, "forbidden") {
			return true
		}
	}
	return false
}
