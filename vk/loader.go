package vk

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"unsafe"
)

// loader is an opened Vulkan loader library.
type loader struct {
	name                string  // the library that opened
	getInstanceProcAddr uintptr // vkGetInstanceProcAddr
}

var (
	loaderOnce sync.Once
	loaderVal  *loader
	loaderErr  error
)

// libraryNames lists the loader libraries to try: $VKGRAD_VULKAN_LIBRARY alone when set (a
// path or a name), else the platform's usual names.
func libraryNames() []string {
	if v := os.Getenv("VKGRAD_VULKAN_LIBRARY"); v != "" {
		return []string{v}
	}
	return defaultLibraryNames()
}

// getLoader opens the loader once per process.
func getLoader() (*loader, error) {
	loaderOnce.Do(func() { loaderVal, loaderErr = openLoader(libraryNames()) })
	return loaderVal, loaderErr
}

// openLoader tries each library in turn and returns ErrNoLoader, naming all of them, when
// none opens or exports vkGetInstanceProcAddr.
func openLoader(names []string) (*loader, error) {
	var why []string
	for _, n := range names {
		lib, err := openLibrary(n)
		if err != nil {
			why = append(why, fmt.Sprintf("%s: %v", n, err))
			continue
		}
		sym, err := librarySymbol(lib, "vkGetInstanceProcAddr")
		if err != nil || sym == 0 {
			why = append(why, fmt.Sprintf("%s: no vkGetInstanceProcAddr", n))
			continue
		}
		return &loader{name: n, getInstanceProcAddr: sym}, nil
	}
	if len(names) == 0 {
		why = append(why, "no loader library is known for this platform")
	}
	return nil, fmt.Errorf("%w (tried %s)", ErrNoLoader, strings.Join(why, "; "))
}

// procAddr looks up a Vulkan function through vkGetInstanceProcAddr (instance 0 for the
// global functions).
func (l *loader) procAddr(instance uintptr, name string) uintptr {
	c := cstr(name)
	r := callPtr(l.getInstanceProcAddr, instance, uintptr(unsafe.Pointer(&c[0])))
	return r
}

// cstr returns s as a NUL-terminated C string.
func cstr(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}

// gostr reads a NUL-terminated string from a fixed-size C char array.
func gostr(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// cstrAt reads a NUL-terminated C string at p (nil gives "").
func cstrAt(p unsafe.Pointer) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(p, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(p), n))
}

// loadFuncs fills every uintptr field of the struct *table with the address of the function
// named "vk" + field name, using lookup; it returns the names of those it could not find.
func loadFuncs(table any, lookup func(name string) uintptr) (missing []string) {
	v := reflect.ValueOf(table).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		name := "vk" + t.Field(i).Name
		p := lookup(name)
		if p == 0 {
			missing = append(missing, name)
		}
		v.Field(i).SetUint(uint64(p))
	}
	return missing
}
