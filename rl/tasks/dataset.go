package tasks

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/vkgrad/vkgrad/rl"
)

// Message is one turn of a conversation, as chat datasets and templates write it.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ToolCalls are an assistant turn's function calls.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// DatasetOptions say how to read a dataset file.
type DatasetOptions struct {
	// Fields maps a role to the dataset's own field name where they differ, e.g.
	// {"prompt": "question"} (--dataset-field prompt=question). Roles: prompt, messages,
	// answer, completion, tools.
	Fields map[string]string
	// Chat renders a conversation, with the function specs the row offers (OpenAI style;
	// nil: none), into the prompt text the model sees, ending with the assistant's turn
	// opened; nil when the model has no chat template (then a line with messages is an error).
	Chat func(msgs []Message, tools []json.RawMessage) (string, error)
	// Task names the prompts' task in metrics (default "dataset").
	Task string
	// RequireAnswer refuses a line with no answer (no answer, no completion, no final
	// assistant turn): supervised training and the verifiers that compare with the answer
	// would otherwise train or score on an empty target.
	RequireAnswer bool
}

// fieldRoles are the dataset fields with a meaning; the rest is metadata for rewards.
var fieldRoles = []string{"prompt", "messages", "answer", "completion", "tools"}

// ParseFieldMap reads "role=field,role=field" (--dataset-field) into a field map.
func ParseFieldMap(spec string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(spec) == "" {
		return out, nil
	}
	for _, kv := range strings.Split(spec, ",") {
		role, field, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || field == "" {
			return nil, fmt.Errorf("--dataset-field %q: want role=field, e.g. prompt=question", kv)
		}
		known := false
		for _, r := range fieldRoles {
			known = known || r == role
		}
		if !known {
			return nil, fmt.Errorf("--dataset-field %q: role %q is not one of %s", kv, role, strings.Join(fieldRoles, ", "))
		}
		out[role] = field
	}
	return out, nil
}

// LoadDataset reads a dataset file in Hugging Face TRL's field names: JSON Lines (one object a
// line), a JSON array of objects, or Parquet, told apart by their first bytes. Each example
// has "prompt" (text, or a list of messages) or "messages" (a conversation: the prompt is
// every turn before the last assistant turn, whose content is the completion), optional
// "answer" (what rewards check) and "completion" (the supervised target), optional "tools"
// (function specs, see [Prompt.Tools]), and any other fields, which are passed to rewards as
// metadata (strings as they are, other values as compact JSON text with sorted keys). Messages
// may carry "tool_calls" (see [ToolCall]) and have the role "tool". A Parquet row reads as the JSON object of its columns,
// so the same rows load to the same prompts from any layout. A UTF-8 byte order mark opening
// a JSON file is skipped; text that is not valid UTF-8 is an error (JSON decoding would turn
// its bytes into U+FFFD unseen). Errors name the file, the line (or Parquet row) and the
// field.
func LoadDataset(path string, o DatasetOptions) ([]Prompt, error) {
	if o.Task == "" {
		o.Task = "dataset"
	}
	var out []Prompt
	err := readRecords(path, func(r record) error {
		p, err := o.parseObject(r.obj)
		if err != nil {
			return err
		}
		p.Where = r.where
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no examples", path)
	}
	return out, nil
}

// LoadDatasetFiles reads the files of one dataset split in order (the shards a Hub dataset
// publishes a split in, say) as one dataset, each prompt named by its own file.
func LoadDatasetFiles(paths []string, o DatasetOptions) ([]Prompt, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("dataset: no files")
	}
	var out []Prompt
	for _, p := range paths {
		ps, err := LoadDataset(p, o)
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	return out, nil
}

// utf8BOM is the byte order mark some editors write at the start of a UTF-8 file.
var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// scanLines calls fn with each non-blank line of a JSONL file (trimmed, numbered from 1), the
// byte order mark of the first line removed; a line that is not valid UTF-8 is refused. Errors
// from fn are given the file and line.
func scanLines(path string, maxLine int, fn func(line int, b []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if line == 1 {
			b = bytes.TrimPrefix(b, utf8BOM)
		}
		if b = bytes.TrimSpace(b); len(b) == 0 {
			continue
		}
		if !utf8.Valid(b) {
			return fmt.Errorf("%s:%d: not valid UTF-8 (byte %d); save the file as UTF-8", path, line, invalidUTF8At(b)+1)
		}
		if err := fn(line, b); err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// invalidUTF8At is the offset of the first byte of b that is not part of valid UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

func (o DatasetOptions) field(role string) string {
	if f, ok := o.Fields[role]; ok {
		return f
	}
	return role
}

// parseObject turns one example into a Prompt.
func (o DatasetOptions) parseObject(obj map[string]json.RawMessage) (Prompt, error) {
	p := Prompt{Task: o.Task, Meta: rl.Meta{}}
	var err error
	if p.Answer, err = optionalString(obj, o.field("answer")); err != nil {
		return Prompt{}, err
	}
	completion, err := optionalString(obj, o.field("completion"))
	if err != nil {
		return Prompt{}, err
	}
	if p.Tools, err = parseTools(obj[o.field("tools")], o.field("tools")); err != nil {
		return Prompt{}, err
	}
	if completion, err = o.promptText(obj, &p, completion); err != nil {
		return Prompt{}, err
	}
	if p.Answer == "" {
		p.Answer = completion
	}
	if p.Answer == "" && o.RequireAnswer {
		return Prompt{}, fmt.Errorf("no answer to train or score on: give %q or %q, or end %q with an assistant turn",
			o.field("answer"), o.field("completion"), o.field("messages"))
	}
	if p.Row, err = rowJSON(obj); err != nil {
		return Prompt{}, err
	}
	used := map[string]bool{}
	for _, r := range fieldRoles {
		used[o.field(r)] = true
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if used[k] {
			continue
		}
		var s string
		if json.Unmarshal(obj[k], &s) == nil {
			p.Meta[k] = s
		} else {
			p.Meta[k] = canonicalJSON(obj[k])
		}
	}
	p.Meta["task"] = p.Task
	if p.Answer != "" { // absent, so the verifiers that need an answer say so
		p.Meta["answer"] = p.Answer
	}
	return p, nil
}

// promptText sets p's prompt: a text "prompt", a list of messages under "prompt", or a
// "messages" conversation whose final assistant turn becomes the completion when none is
// given (the whole conversation is then p.Conversation). It returns the completion.
func (o DatasetOptions) promptText(obj map[string]json.RawMessage, p *Prompt, completion string) (string, error) {
	pf, mf := o.field("prompt"), o.field("messages")
	if raw, ok := obj[pf]; ok && string(raw) != "null" { // null: a Parquet column without a value here
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if s == "" {
				return "", fmt.Errorf("field %q is empty", pf)
			}
			p.Text = s
			return completion, nil
		}
		msgs, err := messages(raw, pf)
		if err != nil {
			return "", err
		}
		p.Messages = msgs
		p.Text, err = o.render(msgs, p.Tools, pf)
		return completion, err
	}
	raw, ok := obj[mf]
	if !ok || string(raw) == "null" {
		return "", fmt.Errorf("no %q or %q field", pf, mf)
	}
	msgs, err := messages(raw, mf)
	if err != nil {
		return "", err
	}
	if last := msgs[len(msgs)-1]; last.Role == "assistant" && len(msgs) > 1 {
		if completion == "" {
			completion = last.Content
			p.Conversation = msgs
		}
		msgs = msgs[:len(msgs)-1]
	}
	p.Messages = msgs
	p.Text, err = o.render(msgs, p.Tools, mf)
	return completion, err
}

func (o DatasetOptions) render(msgs []Message, tools []json.RawMessage, field string) (string, error) {
	if o.Chat == nil {
		return "", fmt.Errorf("field %q holds messages, but the model has no chat template: give the prompt as text", field)
	}
	text, err := o.Chat(msgs, tools)
	if err != nil {
		return "", fmt.Errorf("field %q: %w", field, err)
	}
	return text, nil
}

func messages(raw json.RawMessage, field string) ([]Message, error) {
	var msgs []Message
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return nil, fmt.Errorf("field %q: want a string or a list of {\"role\", \"content\"} messages: %v", field, err)
	}
	if len(msgs) == 0 {
		return nil, fmt.Errorf("field %q: no messages", field)
	}
	for i, m := range msgs {
		switch m.Role {
		case "system", "user", "assistant", "tool":
		default:
			return nil, fmt.Errorf("field %q: message %d has role %q (want system, user, assistant or tool)", field, i, m.Role)
		}
		if len(m.ToolCalls) > 0 && m.Role != "assistant" {
			return nil, fmt.Errorf("field %q: message %d has tool calls but the role %q (only an assistant calls tools)", field, i, m.Role)
		}
	}
	return msgs, nil
}

func optionalString(obj map[string]json.RawMessage, field string) (string, error) {
	raw, ok := obj[field]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("field %q is %s, want a string", field, raw)
	}
	return s, nil
}

// SplitHeldOut holds out round(frac × the number of distinct prompt texts) of them, at least
// one, with every row of each: the prompts whose texts hash lowest under seed, so the split is
// the same however the file is ordered and a prompt repeated in the file (with other answers,
// say) lands on one side only. The held-out rows come in hash order, so a cap on their number
// keeps the same ones too. A dataset of a single distinct prompt cannot spare one: it is all
// training, and heldOut is empty.
func SplitHeldOut(ps []Prompt, frac float64, seed uint64) (train, heldOut []Prompt, err error) {
	if !(frac >= 0 && frac < 1) {
		return nil, nil, fmt.Errorf("held-out share %v: want a value in [0, 1)", frac)
	}
	rank := map[string]uint64{}
	for _, p := range ps {
		if _, ok := rank[p.Text]; !ok {
			rank[p.Text] = textHash(p.Text, seed)
		}
	}
	distinct := len(rank)
	n := int(math.Round(frac * float64(distinct)))
	if frac > 0 {
		n = max(n, 1)
	}
	switch {
	case n == 0 || distinct < 2:
		return ps, nil, nil
	case n >= distinct:
		return nil, nil, fmt.Errorf("held-out share %v of %d distinct prompts leaves none to train on; use a smaller share or --eval-dataset", frac, distinct)
	}
	texts := make([]string, 0, distinct)
	for t := range rank {
		texts = append(texts, t)
	}
	sort.Slice(texts, func(i, j int) bool {
		a, b := texts[i], texts[j]
		return rank[a] < rank[b] || rank[a] == rank[b] && a < b
	})
	held := map[string]bool{}
	for _, t := range texts[:n] {
		held[t] = true
	}
	for _, p := range ps {
		if held[p.Text] {
			heldOut = append(heldOut, p)
		} else {
			train = append(train, p)
		}
	}
	sort.SliceStable(heldOut, func(i, j int) bool {
		a, b := heldOut[i].Text, heldOut[j].Text
		return rank[a] < rank[b] || rank[a] == rank[b] && a < b
	})
	return train, heldOut, nil
}

// textHash is a prompt text's place in the held-out order of seed.
func textHash(text string, seed uint64) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	h.Write([]byte(text))
	return h.Sum64()
}
