package webhook

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Log formats (--log-format).
const (
	LogFormatText = "text"
	LogFormatJSON = "json"
)

// LogFormats are the allowed log formats, sorted.
var LogFormats = []string{LogFormatJSON, LogFormatText}

// LogField is one field of a structured log line. Quote: in text, the
// value is a quoted string.
type LogField struct {
	Key   string
	Value any
	Quote bool
}

// Logger writes the webhook's log, one line per message: in text, a UTC
// timestamp and the message (a review's fields as key=value); in JSON, one
// object per line with the time, the message and the fields.
type Logger struct {
	json bool
	out  io.Writer
	now  func() time.Time
	mu   sync.Mutex
}

// NewLogger returns a logger writing to out in format (LogFormats; ""
// is text).
func NewLogger(out io.Writer, format string) (*Logger, error) {
	switch format {
	case "", LogFormatText:
		return &Logger{out: out, now: time.Now}, nil
	case LogFormatJSON:
		return &Logger{json: true, out: out, now: time.Now}, nil
	}
	return nil, fmt.Errorf("unknown value %q (allowed: %s)", format, strings.Join(LogFormats, ", "))
}

// Printf logs a message.
func (l *Logger) Printf(format string, args ...any) {
	l.Fields(fmt.Sprintf(format, args...), nil)
}

// Fields logs a message with fields.
func (l *Logger) Fields(msg string, fields []LogField) {
	now := l.now().UTC()
	var line []byte
	if l.json {
		line = jsonLine(now, msg, fields)
	} else {
		line = []byte(now.Format("2006/01/02 15:04:05 ") + textLine(msg, fields))
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.out.Write(line)
}

// textLine is msg followed by the fields as key=value.
func textLine(msg string, fields []LogField) string {
	var b strings.Builder
	b.WriteString(msg)
	for _, f := range fields {
		if f.Quote {
			fmt.Fprintf(&b, " %s=%q", f.Key, f.Value)
		} else {
			fmt.Fprintf(&b, " %s=%v", f.Key, f.Value)
		}
	}
	return b.String()
}

// jsonLine is one JSON object: time, msg, then the fields in their order.
func jsonLine(now time.Time, msg string, fields []LogField) []byte {
	var b strings.Builder
	b.WriteString(`{"time":`)
	writeJSON(&b, now.Format(time.RFC3339Nano))
	b.WriteString(`,"msg":`)
	writeJSON(&b, msg)
	for _, f := range fields {
		b.WriteByte(',')
		writeJSON(&b, f.Key)
		b.WriteByte(':')
		v := f.Value
		if d, ok := v.(time.Duration); ok {
			v = d.String()
		}
		writeJSON(&b, v)
	}
	b.WriteByte('}')
	return []byte(b.String())
}

func writeJSON(b *strings.Builder, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		data, _ = json.Marshal(fmt.Sprint(v))
	}
	b.Write(data)
}
