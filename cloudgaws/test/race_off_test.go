//go:build !race

package test

const raceSlack = 0
