//go:build linux || darwin || freebsd

package doctor

import "syscall"

// freeDisk is how many bytes an unprivileged user may still write on dir's filesystem.
func freeDisk(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}
