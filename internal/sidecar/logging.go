package sidecar

import (
	"fmt"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// NewLogger builds the process logger. format is "json", "console" or "" (console
// when stderr is a terminal, JSON otherwise, so that pods log JSON and people read
// text). The returned level can be changed at run time (the /log/level endpoint).
func NewLogger(level, format string) (*zap.Logger, zap.AtomicLevel, error) {
	lvl, err := zap.ParseAtomicLevel(level)
	if err != nil {
		return nil, lvl, fmt.Errorf("log.level %q: want debug, info, warn or error", level)
	}
	if format == "" {
		format = "json"
		if stderrIsTerminal() {
			format = "console"
		}
	}
	var enc zapcore.Encoder
	switch format {
	case "json":
		cfg := zap.NewProductionEncoderConfig()
		cfg.EncodeTime = zapcore.ISO8601TimeEncoder
		enc = zapcore.NewJSONEncoder(cfg)
	case "console":
		cfg := zap.NewDevelopmentEncoderConfig()
		cfg.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
		enc = zapcore.NewConsoleEncoder(cfg)
	default:
		return nil, lvl, fmt.Errorf("log.format %q: want json or console", format)
	}
	core := zapcore.NewCore(enc, zapcore.Lock(os.Stderr), lvl)
	return zap.New(core), lvl, nil
}

func stderrIsTerminal() bool {
	fi, err := os.Stderr.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
