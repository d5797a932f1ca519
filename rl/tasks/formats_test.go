package tasks

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// parquetMessage and parquetRow are a Parquet layout as the Hugging Face Hub publishes chat
// and math datasets: text columns, numbers, a list of {role, content} structs and a nested
// struct of metadata.
type parquetMessage struct {
	Role    string `parquet:"role" json:"role"`
	Content string `parquet:"content" json:"content"`
}

type parquetInfo struct {
	Level int64    `parquet:"level" json:"level"`
	Tags  []string `parquet:"tags,list" json:"tags"`
}

type parquetRow struct {
	Question *string          `parquet:"question,optional" json:"question"`
	Answer   *string          `parquet:"answer,optional" json:"answer"`
	Messages []parquetMessage `parquet:"messages,list" json:"messages,omitempty"`
	Score    float64          `parquet:"score" json:"score"`
	ID       int32            `parquet:"id" json:"id"`
	Info     parquetInfo      `parquet:"info" json:"info"`
	Flag     bool             `parquet:"flag" json:"flag"`
}

func strp(s string) *string { return &s }

// sampleRows are rows that use every kind of column, GSM8K's answers among them.
func sampleRows() []parquetRow {
	return []parquetRow{
		{Question: strp("Natalia sold 48 clips in April and half as many in May. How many in all?"), Answer: strp("48/2 = 24\n48+24 = 72\n#### 72"),
			Score: 1.5, ID: 1, Info: parquetInfo{Level: 2, Tags: []string{"b", "a"}}, Flag: true},
		{Answer: strp("#### 5"), Messages: []parquetMessage{{"system", "be brief"}, {"user", "2+3?"}}, ID: 2, Info: parquetInfo{Tags: []string{}}},
		{Question: strp("q <&> \"quoted\" é 漢字"), Answer: nil, Score: -0.25, ID: 3, Info: parquetInfo{Tags: []string{}}},
	}
}

// writeParquet writes rows to a Parquet file in dir.
func writeParquet[T any](t testing.TB, dir, name string, rows []T) string {
	t.Helper()
	var buf bytes.Buffer
	if err := parquet.Write(&buf, rows); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeJSONRows writes rows as JSON Lines, or as one indented JSON array.
func writeJSONRows[T any](t *testing.T, dir, name string, rows []T, array bool) string {
	t.Helper()
	var b []byte
	if array {
		var err error
		if b, err = json.MarshalIndent(rows, "", "  "); err != nil {
			t.Fatal(err)
		}
	} else {
		for _, r := range rows {
			line, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			b = append(append(b, line...), '\n')
		}
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The same rows as JSON Lines, a JSON array and Parquet load to the same prompts, each named
// by its line or row.
func TestDatasetLayoutsLoadAlike(t *testing.T) {
	dir := t.TempDir()
	rows := sampleRows()
	paths := []string{
		writeJSONRows(t, dir, "d.jsonl", rows, false),
		writeJSONRows(t, dir, "d.json", rows, true),
		writeParquet(t, dir, "d.parquet", rows),
		writeParquet(t, dir, "d-without-extension", rows),
	}
	chat := func(m []Message, _ []json.RawMessage) (string, error) {
		var b strings.Builder
		for _, x := range m {
			b.WriteString(x.Role + ": " + x.Content + "\n")
		}
		return b.String(), nil
	}
	o := DatasetOptions{Chat: chat, Fields: map[string]string{"prompt": "question"}}
	var want []Prompt
	for i, path := range paths {
		ps, err := LoadDataset(path, o)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		wheres := []string{ps[0].Where, ps[1].Where, ps[2].Where}
		wantWhere := map[int][]string{
			0: {path + ":1", path + ":2", path + ":3"},
			1: arrayElementLines(t, path),
			2: {path + ": row 0", path + ": row 1", path + ": row 2"},
		}[min(i, 2)]
		if !reflect.DeepEqual(wheres, wantWhere) {
			t.Errorf("%s: rows named %q, want %q", path, wheres, wantWhere)
		}
		for j := range ps {
			// A Parquet row holds every column (null or empty where the line had none).
			ps[j].Where, ps[j].Row = "", nil
		}
		if i == 0 {
			want = ps
			continue
		}
		if !reflect.DeepEqual(ps, want) {
			t.Errorf("%s loads to\n%#v\nwant (as JSON Lines)\n%#v", path, ps, want)
		}
	}
	if got := want[0].Meta; got["info"] != `{"level":2,"tags":["b","a"]}` || got["score"] != "1.5" || got["id"] != "1" || got["flag"] != "true" {
		t.Errorf("metadata %q", got)
	}
	if want[2].Text != "q <&> \"quoted\" é 漢字" || want[2].Answer != "" || want[2].Meta["answer"] != "" {
		t.Errorf("row 2: %+v", want[2])
	}
	if want[1].Text != "system: be brief\nuser: 2+3?\n" {
		t.Errorf("messages from a list of structs: %q", want[1].Text)
	}
}

// arrayElementLines are the lines on which an indented JSON array's elements open.
func arrayElementLines(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i, l := range strings.Split(string(b), "\n") {
		if l == "  {" {
			out = append(out, fmt.Sprintf("%s:%d", path, i+1))
		}
	}
	return out
}

// gsm8kRow is GSM8K's layout on the Hub.
type gsm8kRow struct {
	Question string `parquet:"question"`
	Answer   string `parquet:"answer"`
}

// GSM8K's Parquet file loads with --dataset-field prompt=question: the answer keeps its
// "#### N" line for the numeric verifier.
func TestGSM8KParquet(t *testing.T) {
	path := writeParquet(t, t.TempDir(), "train-00000-of-00001.parquet", []gsm8kRow{
		{"Weng earns $12 an hour. How much did she earn for 50 minutes?", "12/60 = 0.2 a minute.\n0.2 * 50 = 10\n#### 10"},
	})
	ps, err := LoadDataset(path, DatasetOptions{Fields: map[string]string{"prompt": "question"}, RequireAnswer: true})
	if err != nil {
		t.Fatal(err)
	}
	if ps[0].Text != "Weng earns $12 an hour. How much did she earn for 50 minutes?" || !strings.HasSuffix(ps[0].Meta["answer"], "#### 10") {
		t.Errorf("%+v", ps[0])
	}
}

// Bad files are refused naming the file and the line, element or row: a truncated Parquet
// file, one whose footer claims gigabytes (read, it would be allocated), a .parquet file that is not one, text that is not UTF-8, a row without the prompt.
func TestFaultDatasetLayoutErrors(t *testing.T) {
	dir := t.TempDir()
	good := writeParquet(t, dir, "good.parquet", sampleRows())
	raw, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	truncated := write("truncated.parquet", raw[:len(raw)/2])
	hugeFooter := append([]byte(nil), raw...)
	binary.LittleEndian.PutUint32(hugeFooter[len(raw)-8:], 0x7fffffff)
	footer := write("footer.parquet", hugeFooter)
	notParquet := write("fake.parquet", []byte(`{"question": "q"}`+"\n"))
	badUTF8 := writeParquet(t, dir, "utf8.parquet", []gsm8kRow{{"fine", "1"}, {"caf\xe9", "2"}})
	emptyPrompt := writeParquet(t, dir, "empty.parquet", []gsm8kRow{{"fine", "1"}, {"fine too", "2"}, {"", "3"}})
	noRows := writeParquet(t, dir, "norows.parquet", []gsm8kRow{})
	arrayBad := write("bad.json", []byte("[\n  {\"question\": \"q\"},\n  \"just text\"\n]"))
	arrayTrail := write("trail.json", []byte("[{\"question\": \"q\"}]\n{\"question\": \"r\"}\n"))
	arrayUTF8 := write("utf8.json", []byte("[{\"question\": \"q\"},\n{\"question\": \"caf\xe9\"}]"))
	arrayCut := write("cut.json", []byte("[{\"question\": \"q\"},\n{\"question\": "))
	o := DatasetOptions{Fields: map[string]string{"prompt": "question"}}
	for path, want := range map[string]string{
		truncated:   truncated + ": not a readable Parquet file",
		footer:      footer + ": not a readable Parquet file: a footer of 2147483647 bytes in a file of",
		notParquet:  notParquet + `: named .parquet but does not start with Parquet's "PAR1" mark`,
		badUTF8:     badUTF8 + `: row 1: column "question": not valid UTF-8 (byte 4)`,
		emptyPrompt: emptyPrompt + `: row 2: field "question" is empty`,
		noRows:      noRows + ": no examples",
		arrayBad:    arrayBad + ":3: not a JSON object",
		arrayTrail:  arrayTrail + ":2: text after the JSON array",
		arrayUTF8:   arrayUTF8 + ":2: not valid UTF-8",
		arrayCut:    arrayCut + ":2: unexpected EOF",
	} {
		if _, err := LoadDataset(path, o); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", filepath.Base(path), err, want)
		}
	}
}

// FuzzLoadParquet: any file that starts like Parquet gives prompts with text, or an error;
// never a crash or a runaway allocation.
func FuzzLoadParquet(f *testing.F) {
	dir := f.TempDir()
	for i, rows := range [][]parquetRow{sampleRows(), sampleRows()[:1]} {
		b, err := os.ReadFile(writeParquet(f, dir, string(rune('a'+i))+".parquet", rows))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	b, err := os.ReadFile(writeParquet(f, dir, "gsm.parquet", []gsm8kRow{{"q", "#### 1"}, {"r", "#### 2"}}))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("PAR1PAR1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "d.parquet")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		chat := func(m []Message, _ []json.RawMessage) (string, error) { return m[0].Content + "|", nil }
		ps, err := LoadDataset(path, DatasetOptions{Chat: chat, Fields: map[string]string{"prompt": "question"}})
		if err != nil {
			return
		}
		for i, p := range ps {
			if p.Text == "" || p.Meta["answer"] != p.Answer || !strings.Contains(p.Where, ": row ") {
				t.Fatalf("prompt %d: %+v", i, p)
			}
		}
	})
}

// A split published in shards loads as one dataset, each prompt named by its shard.
func TestLoadDatasetFilesJoinsShards(t *testing.T) {
	dir := t.TempDir()
	a := writeParquet(t, dir, "train-00000-of-00002.parquet", []gsm8kRow{{"q1", "#### 1"}, {"q2", "#### 2"}})
	b := writeParquet(t, dir, "train-00001-of-00002.parquet", []gsm8kRow{{"q3", "#### 3"}})
	ps, err := LoadDatasetFiles([]string{a, b}, DatasetOptions{Fields: map[string]string{"prompt": "question"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 || ps[2].Text != "q3" || ps[2].Where != b+": row 0" || ps[1].Where != a+": row 1" {
		t.Fatalf("%+v", ps)
	}
	if _, err := LoadDatasetFiles(nil, DatasetOptions{}); err == nil {
		t.Error("no files should be an error")
	}
}
