package main

import "github.com/vkgrad/vkgrad/internal/fingerprint"

// dataFingerprint identifies a run's data by content (fingerprint.Data).
func dataFingerprint(path string) (string, error) { return fingerprint.Data(path) }
