package tarstream

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A hard link the archive made is replaced by a later entry of its name, not written
// through into the file it links to.
func TestExtractReplacesAnArchivesHardLink(t *testing.T) {
	dst := t.TempDir()
	data := archive(t,
		&tar.Header{Name: "kept", Typeflag: tar.TypeReg},
		&tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "kept"},
		&tar.Header{Name: "h", Typeflag: tar.TypeReg},
	)
	if err := Extract(bytes.NewReader(data), dst); err != nil {
		t.Fatal(err)
	}
	kept, err1 := os.Stat(filepath.Join(dst, "kept"))
	h, err2 := os.Stat(filepath.Join(dst, "h"))
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if os.SameFile(kept, h) {
		t.Errorf("h was written through the hard link to kept")
	}
}

// header is a stream of one header whose entry's content is not there.
func header(t *testing.T, h *tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := tar.NewWriter(&buf).WriteHeader(h); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestExtractLimits: an entry larger than the limit (which a sparse file of a small
// stream may claim to be), more entries than the limit, or a name nested deeper, is
// refused before it is written.
func TestExtractLimits(t *testing.T) {
	small := limits{entrySize: 1 << 20, entries: 5, depth: 4}
	many := make([]*tar.Header, 6)
	for i := range many {
		many[i] = &tar.Header{Name: fmt.Sprintf("f%d", i), Typeflag: tar.TypeReg}
	}
	tests := []struct {
		name   string
		limits limits
		stream []byte
		want   string
	}{
		{"an entry of 2 TiB", defaultLimits, header(t, &tar.Header{Name: "big", Typeflag: tar.TypeReg, Size: 2 << 40, Mode: 0o644}),
			`the archive's entry "big" is 2 TiB, over the limit of 64 GiB for an entry`},
		{"an entry over a lower limit", small, header(t, &tar.Header{Name: "d/big", Typeflag: tar.TypeReg, Size: 1<<20 + 1, Mode: 0o644}),
			`the archive's entry "d/big" is 1048577 bytes, over the limit of 1 MiB for an entry`},
		{"too many entries", small, archive(t, many...), `the archive has more than 5 entries, the limit`},
		{"too deep", small, archive(t, &tar.Header{Name: "a/b/c/d/e", Typeflag: tar.TypeReg}),
			`the archive's entry "a/b/c/d/e" is 5 levels deep, over the limit of 4`},
		{"deep directories", defaultLimits, archive(t, &tar.Header{Name: strings.Repeat("d/", 300), Typeflag: tar.TypeDir, Mode: 0o755}),
			`levels deep, over the limit of 256`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := t.TempDir()
			err := extract(bytes.NewReader(tc.stream), dst, false, tc.limits)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to say %s", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dst, "big")); err == nil {
				t.Errorf("the entry over the limit was written")
			}
		})
	}
	// At the limits, it unpacks.
	if err := extract(bytes.NewReader(archive(t, many[:5]...)), t.TempDir(), false, small); err != nil {
		t.Errorf("5 entries: %v", err)
	}
	if err := extract(bytes.NewReader(archive(t, &tar.Header{Name: "a/b/c/d", Typeflag: tar.TypeReg})), t.TempDir(), false, small); err != nil {
		t.Errorf("4 levels: %v", err)
	}
}
