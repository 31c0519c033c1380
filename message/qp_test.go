package message

import (
	"bytes"
	"io"
	"mime/quotedprintable"
	"strings"
	"testing"
	"testing/iotest"

	"burner/internal/benchdata"
)

// readAllIn reads r to its end or first error in reads of size bytes, and
// returns what it read and the error ("" at EOF).
func readAllIn(r io.Reader, size int) ([]byte, string) {
	var out []byte
	buf := make([]byte, size)
	for range 1 << 20 {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out, ""
		}
		if err != nil {
			return out, err.Error()
		}
	}
	return out, "no end"
}

// checkQP compares qpReader with mime/quotedprintable's Reader on in:
// the same bytes and the same error, read in several sizes, from a source
// that gives all it has and from one that gives a byte at a time.
func checkQP(t *testing.T, in string) {
	t.Helper()
	for _, size := range []int{1, 3, 64, 4096, 1 << 16} {
		for _, oneByte := range []bool{false, true} {
			src := func() io.Reader {
				if oneByte {
					return iotest.OneByteReader(strings.NewReader(in))
				}
				return strings.NewReader(in)
			}
			want, wantErr := readAllIn(quotedprintable.NewReader(src()), size)
			q := newQPReader(src())
			got, gotErr := readAllIn(q, size)
			q.release()
			if !bytes.Equal(got, want) || gotErr != wantErr {
				t.Fatalf("qpReader(%.100q), reads of %d (one byte at a time: %v) = %.100q, %q; quotedprintable gives %.100q, %q",
					in, size, oneByte, got, gotErr, want, wantErr)
			}
		}
	}
}

func TestQPReaderAsGo(t *testing.T) {
	long := strings.Repeat("abcdefgh=3D", 500) // a line past the 4 KiB buffer
	for _, in := range []string{
		"", "plain", "a=3Db=3db\r\nline two =\r\nsoft\r\n", "tail  \t\r\nx", "=", "a=", "==", "=\r\n", "=\n",
		"a=\nb", "a= \r\nb", "a= x\r\nb", "a=4", "=4", "=ZZ=2", "=\r", "bad\x01byte", "del\x7f", "\xff\xfe high",
		"a\rb\nc\r\n", "=0a=0D", "x\r\n\r\n", "soft =  \n", "soft=\t \r\n", "end with space ", long, long + "\r\nafter",
		strings.Repeat("a", 4095) + "=\r\nb", strings.Repeat("a", 4094) + "=\r\nb", strings.Repeat(" ", 5000) + "\n",
	} {
		checkQP(t, in)
	}
	for _, nl := range benchdata.Batch(5, 1) {
		data := nl.Data()
		checkQP(t, string(data[bytes.Index(data, []byte("quoted-printable\r\n\r\n"))+20:]))
	}
}

func FuzzQPReader(f *testing.F) {
	for _, s := range []string{"a=3Db\r\n", "soft=\r\nbreak", "=\n", "x= \r\n", "=4", "bad\x01", strings.Repeat("ab=", 1500)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		checkQP(t, in)
	})
}
