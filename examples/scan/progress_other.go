//go:build !unix

package main

import "os"

// termWidth is the width in columns of the terminal f is, 0 when it
// cannot be read (here, never).
func termWidth(*os.File) int { return 0 }
