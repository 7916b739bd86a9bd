//go:build !linux

package sandbox

import "errors"

// exchange needs Linux's renameat2.
func exchange(a, b string) error {
	return errors.New("swap: exchanging two paths needs Linux's renameat2")
}
