//go:build !race

package vk

const raceEnabled = false
