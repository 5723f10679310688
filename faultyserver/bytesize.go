package faultyserver

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// ByteSize is a number of bytes, written in JSON and YAML as an integer or
// as a string with a binary unit: "512B", "1KiB", "64KiB", "1.5MiB",
// "1GiB". Decimal units (KB, MB) are refused rather than guessed.
type ByteSize int64

var (
	_ json.Marshaler   = ByteSize(0)
	_ json.Unmarshaler = (*ByteSize)(nil)
	_ yaml.Marshaler   = ByteSize(0)
	_ yaml.Unmarshaler = (*ByteSize)(nil)
)

var byteUnits = []struct {
	name string
	size int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}

// String writes b in the largest unit that divides it, e.g. "64KiB",
// "1000B".
func (b ByteSize) String() string {
	for _, u := range byteUnits {
		if b != 0 && int64(b)%u.size == 0 {
			return strconv.FormatInt(int64(b)/u.size, 10) + u.name
		}
	}
	return "0B"
}

// ParseByteSize reads a size as ByteSize's string form, or a plain
// integer of bytes.
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	for _, u := range byteUnits {
		num, ok := strings.CutSuffix(t, u.name)
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v*float64(u.size) > math.MaxInt64/2 {
			return 0, byteSizeError(strconv.Quote(s))
		}
		return ByteSize(math.Round(v * float64(u.size))), nil
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return 0, byteSizeError(strconv.Quote(s))
	}
	return ByteSize(v), nil
}

// MarshalJSON writes b as its string form.
func (b ByteSize) MarshalJSON() ([]byte, error) { return json.Marshal(b.String()) }

// UnmarshalJSON accepts an integer of bytes or a string like "64KiB".
func (b *ByteSize) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		var n int64
		if err := json.Unmarshal(data, &n); err != nil {
			return byteSizeError(string(data))
		}
		*b = ByteSize(n)
		return nil
	}
	v, err := ParseByteSize(s)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// MarshalYAML writes b as its string form.
func (b ByteSize) MarshalYAML() (any, error) { return b.String(), nil }

// UnmarshalYAML accepts an integer of bytes or a string like "64KiB".
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return byteSizeError("a YAML collection")
	}
	v, err := ParseByteSize(n.Value)
	if err != nil {
		return byteSizeError(fmt.Sprintf("%q", n.Value))
	}
	*b = v
	return nil
}

func byteSizeError(got string) error {
	return fmt.Errorf(`want a size like "64KiB" or a number of bytes, got %s`, got)
}
