//go:build unix

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// termWidth is the width in columns of the terminal f is, 0 when it
// cannot be read.
func termWidth(f *os.File) int {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
