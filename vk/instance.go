package vk

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

const validationLayer = "VK_LAYER_KHRONOS_validation"

// apiVersion packs a Vulkan version number.
func apiVersion(major, minor, patch uint32) uint32 { return major<<22 | minor<<12 | patch }

// versionString formats a packed Vulkan version.
func versionString(v uint32) string {
	return fmt.Sprintf("%d.%d.%d", v>>22&0x7f, v>>12&0x3ff, v&0xfff)
}

// InstanceOptions configure NewInstance.
type InstanceOptions struct {
	// Validation enables VK_LAYER_KHRONOS_validation and collects its messages (see
	// Instance.ValidationMessages). ValidationFromEnv reads it from VKGRAD_VALIDATION=1.
	Validation bool
}

// ValidationFromEnv reports whether VKGRAD_VALIDATION asks for the validation layer.
func ValidationFromEnv() bool {
	v := os.Getenv("VKGRAD_VALIDATION")
	return v != "" && v != "0" && v != "false"
}

// Instance is a Vulkan instance (API 1.1 or later).
type Instance struct {
	ld        *loader
	handle    uintptr
	fn        instanceFuncs
	dbg       debugFuncs
	messenger uint64
	log       *messageLog
	logID     uintptr
	version   uint32
}

// messageLog collects validation messages from the debug-utils callback.
type messageLog struct {
	mu   sync.Mutex
	msgs []string
}

var (
	debugCallbackOnce sync.Once
	debugCallbackPtr  uintptr
	messageLogs       sync.Map // uintptr id -> *messageLog
	nextLogID         atomic.Uintptr
)

// debugCallback receives debug-utils messages; user data is an id into messageLogs because Go
// pointers may not be held by C code.
func debugCallback(severity, types uint32, data *debugUtilsMessengerCallbackDataEXT, user uintptr) uintptr {
	v, ok := messageLogs.Load(user)
	if !ok || data == nil {
		return 0
	}
	l := v.(*messageLog)
	sev := "warning"
	if severity&debugSeverityError != 0 {
		sev = "error"
	}
	msg := fmt.Sprintf("%s: %s", sev, cstrAt(data.PMessage))
	l.mu.Lock()
	l.msgs = append(l.msgs, msg)
	l.mu.Unlock()
	return 0
}

// NewInstance creates a Vulkan instance. It fails with ErrNoLoader (wrapped) when no loader
// library is installed.
func NewInstance(opts InstanceOptions) (*Instance, error) {
	ld, err := getLoader()
	if err != nil {
		return nil, err
	}
	var g globalFuncs
	loadFuncs(&g, func(name string) uintptr { return ld.procAddr(0, name) })
	if g.CreateInstance == 0 {
		return nil, fmt.Errorf("vk: loader %s has no vkCreateInstance", ld.name)
	}
	version := apiVersion(1, 0, 0)
	if g.EnumerateInstanceVersion != 0 {
		call(g.EnumerateInstanceVersion, uintptr(unsafe.Pointer(&version)))
	}
	if version < apiVersion(1, 1, 0) {
		return nil, fmt.Errorf("vk: loader %s supports Vulkan %s; vkgrad needs 1.1 or later", ld.name, versionString(version))
	}

	exts, err := instanceExtensions(g, "")
	if err != nil {
		return nil, err
	}
	var enabledExts, enabledLayers []string
	var flags uint32
	if exts["VK_KHR_portability_enumeration"] {
		// Lets the loader list MoltenVK, a portability (not fully conformant) driver.
		enabledExts = append(enabledExts, "VK_KHR_portability_enumeration")
		flags |= instanceCreateEnumeratePortability
	}
	inst := &Instance{ld: ld}
	var dbgInfo *debugUtilsMessengerCreateInfoEXT
	var features *validationFeaturesEXT
	syncFeature := uint32(validationFeatureEnableSync)
	if opts.Validation {
		layers, err := instanceLayers(g)
		if err != nil {
			return nil, err
		}
		if !layers[validationLayer] {
			return nil, fmt.Errorf("vk: VKGRAD_VALIDATION asks for %s, which is not installed", validationLayer)
		}
		if !exts["VK_EXT_debug_utils"] {
			return nil, fmt.Errorf("vk: validation needs instance extension VK_EXT_debug_utils, which the loader lacks")
		}
		enabledLayers = append(enabledLayers, validationLayer)
		enabledExts = append(enabledExts, "VK_EXT_debug_utils")
		if layerExts, err := instanceExtensions(g, validationLayer); err == nil && layerExts["VK_EXT_validation_features"] {
			// Synchronization validation also reports missing barriers between dispatches.
			enabledExts = append(enabledExts, "VK_EXT_validation_features")
			features = &validationFeaturesEXT{
				SType:                         stValidationFeaturesEXT,
				EnabledValidationFeatureCount: 1,
				PEnabledValidationFeatures:    unsafe.Pointer(&syncFeature),
			}
		}
		debugCallbackOnce.Do(func() { debugCallbackPtr = newCallback(debugCallback) })
		inst.log = &messageLog{}
		inst.logID = nextLogID.Add(1)
		messageLogs.Store(inst.logID, inst.log)
		dbgInfo = &debugUtilsMessengerCreateInfoEXT{
			SType:           stDebugUtilsMessengerCreateInfoEXT,
			MessageSeverity: debugSeverityWarning | debugSeverityError,
			MessageType:     debugTypeGeneral | debugTypeValidation | debugTypePerformance,
			PfnUserCallback: debugCallbackPtr,
			PUserData:       inst.logID,
		}
	}

	appName := cstr("vkgrad")
	app := &applicationInfo{
		SType:            stApplicationInfo,
		PApplicationName: unsafe.Pointer(&appName[0]),
		PEngineName:      unsafe.Pointer(&appName[0]),
		ApiVersion:       apiVersion(1, 1, 0),
	}
	if version >= apiVersion(1, 2, 0) {
		app.ApiVersion = apiVersion(1, 2, 0)
	}
	layerPtrs, layerKeep := cstrArray(enabledLayers)
	extPtrs, extKeep := cstrArray(enabledExts)
	ci := &instanceCreateInfo{
		SType:                   stInstanceCreateInfo,
		Flags:                   flags,
		PApplicationInfo:        unsafe.Pointer(app),
		EnabledLayerCount:       uint32(len(enabledLayers)),
		PpEnabledLayerNames:     layerPtrs,
		EnabledExtensionCount:   uint32(len(enabledExts)),
		PpEnabledExtensionNames: extPtrs,
	}
	if dbgInfo != nil {
		// Chained so that messages from vkCreateInstance itself are caught too.
		ci.PNext = unsafe.Pointer(dbgInfo)
		if features != nil {
			features.PNext = unsafe.Pointer(dbgInfo)
			ci.PNext = unsafe.Pointer(features)
		}
	}
	if r := call(g.CreateInstance, uintptr(unsafe.Pointer(ci)), 0, uintptr(unsafe.Pointer(&inst.handle))); r != success {
		inst.dropLog()
		if r == errIncompatibleDriver {
			return nil, fmt.Errorf("%w: the loader found no compatible driver (%v)", ErrNoDevice, check("vkCreateInstance", r))
		}
		return nil, check("vkCreateInstance", r)
	}
	runtime.KeepAlive(layerKeep)
	runtime.KeepAlive(extKeep)
	runtime.KeepAlive(appName)
	runtime.KeepAlive(&syncFeature)
	inst.version = app.ApiVersion
	if missing := loadFuncs(&inst.fn, func(name string) uintptr { return ld.procAddr(inst.handle, name) }); len(missing) > 0 {
		inst.Close()
		return nil, fmt.Errorf("vk: loader %s lacks %v", ld.name, missing)
	}
	if dbgInfo != nil {
		loadFuncs(&inst.dbg, func(name string) uintptr { return ld.procAddr(inst.handle, name) })
		if inst.dbg.CreateDebugUtilsMessengerEXT == 0 {
			inst.Close()
			return nil, fmt.Errorf("vk: vkCreateDebugUtilsMessengerEXT missing although VK_EXT_debug_utils is enabled")
		}
		if err := check("vkCreateDebugUtilsMessengerEXT", call(inst.dbg.CreateDebugUtilsMessengerEXT, inst.handle,
			uintptr(unsafe.Pointer(dbgInfo)), 0, uintptr(unsafe.Pointer(&inst.messenger)))); err != nil {
			inst.Close()
			return nil, err
		}
	}
	return inst, nil
}

// cstrArray builds a C array of C strings; keep must stay alive while the array is used.
func cstrArray(ss []string) (unsafe.Pointer, [][]byte) {
	if len(ss) == 0 {
		return nil, nil
	}
	keep := make([][]byte, len(ss))
	ptrs := make([]unsafe.Pointer, len(ss))
	for i, s := range ss {
		keep[i] = cstr(s)
		ptrs[i] = unsafe.Pointer(&keep[i][0])
	}
	return unsafe.Pointer(&ptrs[0]), keep
}

// instanceExtensions lists the loader's instance extensions, or a layer's when layer is set.
func instanceExtensions(g globalFuncs, layer string) (map[string]bool, error) {
	var name unsafe.Pointer
	if layer != "" {
		c := cstr(layer)
		name = unsafe.Pointer(&c[0])
	}
	var n uint32
	if err := check("vkEnumerateInstanceExtensionProperties", call(g.EnumerateInstanceExtensionProperties, uintptr(name), uintptr(unsafe.Pointer(&n)), 0)); err != nil {
		return nil, err
	}
	props := make([]extensionProperties, n+1)
	if err := check("vkEnumerateInstanceExtensionProperties", call(g.EnumerateInstanceExtensionProperties, uintptr(name), uintptr(unsafe.Pointer(&n)), uintptr(unsafe.Pointer(&props[0])))); err != nil {
		return nil, err
	}
	m := map[string]bool{}
	for _, p := range props[:n] {
		m[gostr(p.ExtensionName[:])] = true
	}
	return m, nil
}

func instanceLayers(g globalFuncs) (map[string]bool, error) {
	var n uint32
	if err := check("vkEnumerateInstanceLayerProperties", call(g.EnumerateInstanceLayerProperties, uintptr(unsafe.Pointer(&n)), 0)); err != nil {
		return nil, err
	}
	props := make([]layerProperties, n+1)
	if err := check("vkEnumerateInstanceLayerProperties", call(g.EnumerateInstanceLayerProperties, uintptr(unsafe.Pointer(&n)), uintptr(unsafe.Pointer(&props[0])))); err != nil {
		return nil, err
	}
	m := map[string]bool{}
	for _, p := range props[:n] {
		m[gostr(p.LayerName[:])] = true
	}
	return m, nil
}

// Validation reports whether the validation layer is on.
func (i *Instance) Validation() bool { return i.log != nil }

// ValidationMessages returns the warnings and errors the validation layer has reported so far
// (nil without validation).
func (i *Instance) ValidationMessages() []string {
	if i.log == nil {
		return nil
	}
	i.log.mu.Lock()
	defer i.log.mu.Unlock()
	return append([]string(nil), i.log.msgs...)
}

func (i *Instance) dropLog() {
	if i.logID != 0 {
		messageLogs.Delete(i.logID)
	}
}

// Close destroys the instance. Devices opened from it must be closed first.
func (i *Instance) Close() {
	if i.handle == 0 {
		return
	}
	if i.messenger != 0 {
		callPtr(i.dbg.DestroyDebugUtilsMessengerEXT, i.handle, uintptr(i.messenger), 0)
		i.messenger = 0
	}
	callPtr(i.fn.DestroyInstance, i.handle, 0)
	i.handle = 0
	// The log stays readable after Close; only the callback's route to it is removed.
	i.dropLog()
}
