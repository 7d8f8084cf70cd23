//go:build !race

package cloudgazure_test

const raceSlack = 0
