package rundir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/vkgrad/vkgrad/internal/atomicfile"
)

// TrimMetrics drops the lines of a metrics file written after step (by a run that stopped
// after its last checkpoint: those steps run again) and a torn last line, and returns how
// many it dropped. Lines without a step belong to no step and stay. A missing file is fine.
func TrimMetrics(path string, step int) (int, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var keep bytes.Buffer
	dropped := 0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var rec struct {
			Step *float64 `json:"step"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Step != nil && *rec.Step > float64(step) {
			dropped++
			continue
		}
		keep.Write(sc.Bytes())
		keep.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if dropped == 0 {
		return 0, nil
	}
	return dropped, atomicfile.WriteFile(path, keep.Bytes(), 0o666)
}
