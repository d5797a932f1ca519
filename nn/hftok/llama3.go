package hftok

import (
	"fmt"
	"strings"
	"time"
	"unicode"
)

// llama3 is Llama 3's template: each turn between header tokens, its content trimmed, the
// first after the BOS token. The template has no tools.
type llama3 struct {
	bos string
}

func (llama3) Name() string { return "llama3" }

func (l llama3) Render(msgs []Message, o ChatOptions) (string, error) {
	if err := plainOnly("llama3", msgs, o); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(l.bos)
	for _, m := range msgs {
		llamaTurn(&b, m.Role, pyStrip(m.Content))
	}
	if o.AddGenerationPrompt {
		b.WriteString(llamaHeader("assistant"))
	}
	return b.String(), nil
}

// llama31 is the template of Llama 3.1 and 3.2 (and 3.3): a system turn always, with the
// knowledge cutoff and today's date, tools as indented JSON in the first user turn or the
// system turn, one tool call per assistant turn as {"name", "parameters"} JSON and tool
// results as ipython turns holding their content as a JSON string.
type llama31 struct {
	bos string
	// name is llama3.1 or llama3.2; 3.2 dates its system turn today rather than 26 Jul 2024.
	name string
}

func (l llama31) Name() string { return l.name }

// llamaToolGuide asks for a call in the template's JSON format.
const llamaToolGuide = `Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.Do not use variables.` + "\n\n"

func (l llama31) Render(msgs []Message, o ChatOptions) (string, error) {
	if err := noQwen3Options(l.name, msgs, o); err != nil {
		return "", err
	}
	tools, err := llamaTools(o)
	if err != nil {
		return "", err
	}
	system := ""
	if msgs[0].Role == "system" {
		system, msgs = pyStrip(msgs[0].Content), msgs[1:]
	}
	var b strings.Builder
	b.WriteString(l.bos + llamaHeader("system"))
	if o.Tools != nil {
		b.WriteString("Environment: ipython\n")
	}
	b.WriteString("Cutting Knowledge Date: December 2023\nToday Date: " + l.date(o) + "\n\n")
	if o.Tools != nil && o.ToolsInSystemMessage {
		b.WriteString("You have access to the following functions. To call a function, please respond with JSON for a function call." + llamaToolGuide + tools)
	}
	b.WriteString(system + "<|eot_id|>")
	if o.Tools != nil && !o.ToolsInSystemMessage {
		if len(msgs) == 0 {
			return "", fmt.Errorf("%s puts the tools in the first user message, and there is none", l.name)
		}
		b.WriteString(llamaHeader("user") + "Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\n" + llamaToolGuide + tools)
		b.WriteString(pyStrip(msgs[0].Content) + "<|eot_id|>")
		msgs = msgs[1:]
	}
	for _, m := range msgs {
		switch {
		case len(m.ToolCalls) > 0:
			call, err := llamaCall(m.ToolCalls)
			if err != nil {
				return "", fmt.Errorf("%s: %w", l.name, err)
			}
			b.WriteString(llamaHeader("assistant") + call + "<|eot_id|>")
		case m.Role == "tool" || m.Role == "ipython":
			var s strings.Builder
			pyString(&s, m.Content) // a string is iterable to the template, so it goes through tojson
			b.WriteString(llamaHeader("ipython") + s.String() + "<|eot_id|>")
		default:
			llamaTurn(&b, m.Role, pyStrip(m.Content))
		}
	}
	if o.AddGenerationPrompt {
		b.WriteString(llamaHeader("assistant"))
	}
	return b.String(), nil
}

// date is the date_string: given, else 3.1's fixed one or, for 3.2, today's.
func (l llama31) date(o ChatOptions) string {
	switch {
	case o.Date != "":
		return o.Date
	case l.name == "llama3.1":
		return "26 Jul 2024"
	}
	return time.Now().Format("02 Jan 2006") // strftime("%d %b %Y")
}

// llamaTools lists the tools as tojson(indent=4), each followed by a blank line.
func llamaTools(o ChatOptions) (string, error) {
	var b strings.Builder
	for i, t := range o.Tools {
		s, err := pyJSONIndent(t, 4)
		if err != nil {
			return "", fmt.Errorf("tool %d: %w", i, err)
		}
		b.WriteString(s + "\n\n")
	}
	return b.String(), nil
}

// llamaCall is an assistant turn's single tool call.
func llamaCall(calls []ToolCall) (string, error) {
	if len(calls) != 1 {
		return "", fmt.Errorf("an assistant turn has %d tool calls; the template renders one", len(calls))
	}
	if calls[0].Function == nil {
		return "", fmt.Errorf("tool call %q: the template reads it from a \"function\" object", calls[0].Name)
	}
	f := *calls[0].Function
	args, err := pyJSON(f.Arguments)
	if err != nil {
		return "", fmt.Errorf("tool call %q: %w", f.Name, err)
	}
	return `{"name": "` + f.Name + `", "parameters": ` + args + "}", nil
}

func llamaHeader(role string) string {
	return "<|start_header_id|>" + role + "<|end_header_id|>\n\n"
}

func llamaTurn(b *strings.Builder, role, content string) {
	b.WriteString(llamaHeader(role) + content + "<|eot_id|>")
}

// pyStrip is Jinja's trim, Python's str.strip(): Unicode white space and the separators
// U+001C to U+001F.
func pyStrip(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f })
}
