// Package export_tiny_harness_plugin_command is the command body: /dice and
// /echo. (wit-bindgen go names the package of each exported interface.)
package export_tiny_harness_plugin_command

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"

	. "wit_component/tiny_harness_plugin_types"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
)

const (
	diceUsage = "usage: /dice NdM, e.g. /dice 2d6 (1-100 dice of 2-1000 sides)"
	echoUsage = "usage: /echo <text>"
)

var diceSpec = regexp.MustCompile(`^([0-9]{1,4})d([0-9]{1,4})$`)

type result = witTypes.Result[Outcome, CommandError]

// Run runs /dice NdM or /echo <text>.
func Run(invocation Invocation) result {
	switch invocation.Command {
	case "dice":
		return dice(argument(invocation, "spec"))
	case "echo":
		text := argument(invocation, "text")
		if text == "" {
			return witTypes.Err[Outcome](MakeCommandErrorUsage(echoUsage))
		}
		return reply(text, witTypes.None[string]())
	default:
		return witTypes.Err[Outcome](MakeCommandErrorFailed("no body for /" + invocation.Command))
	}
}

// argument is the parsed argument name, trimmed; empty when missing.
func argument(invocation Invocation, name string) string {
	for _, arg := range invocation.Arguments {
		if arg.Name == name {
			return strings.TrimSpace(arg.Value)
		}
	}
	return ""
}

// dice rolls NdM: "2d6: 3 + 5 = 8" with data {"rolls":[3,5],"total":8}.
func dice(spec string) result {
	var count, sides int
	if match := diceSpec.FindStringSubmatch(spec); match != nil {
		count, _ = strconv.Atoi(match[1])
		sides, _ = strconv.Atoi(match[2])
	}
	if count < 1 || count > 100 || sides < 2 || sides > 1000 {
		return witTypes.Err[Outcome](MakeCommandErrorUsage(diceUsage))
	}
	// math/rand/v2 is seeded from wasi:random when the instance starts.
	rolls := make([]int, count)
	shown := make([]string, count)
	total := 0
	for i := range rolls {
		rolls[i] = 1 + rand.IntN(sides)
		shown[i] = strconv.Itoa(rolls[i])
		total += rolls[i]
	}
	data, err := json.Marshal(map[string]any{"rolls": rolls, "total": total})
	if err != nil {
		return witTypes.Err[Outcome](MakeCommandErrorFailed(err.Error()))
	}
	text := fmt.Sprintf("%dd%d: %s = %d", count, sides, strings.Join(shown, " + "), total)
	return reply(text, witTypes.Some(string(data)))
}

func reply(text string, data witTypes.Option[string]) result {
	return witTypes.Ok[Outcome, CommandError](Outcome{Reply: Reply{Text: text, Data: data}})
}
