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

// messageLog collects validation messages from the debug-utils callback, and passes each to
// notify when one is set.
type messageLog struct {
	mu     sync.Mutex
	msgs   []string
	notify func(msg string)
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
	notify := l.notify
	l.mu.Unlock()
	if notify != nil {
		notify(msg)
	}
	return 0
}

// NewInstance creates a Vulkan instance. It fails with ErrNoLoader (wrapped) when no loader
// library is installed.
func NewInstance(opts InstanceOptions) (*Instance, error) {
	ld, g, version, err := instanceLoader()
	if err != nil {
		return nil, err
	}
	exts, err := instanceExtensions(g, "")
	if err != nil {
		return nil, err
	}
	inst := &Instance{ld: ld}
	setup := portabilitySetup(exts)
	if opts.Validation {
		if err := setup.addValidation(g, exts); err != nil {
			return nil, err
		}
		setup.dbgInfo = inst.messengerInfo()
	}
	if err := inst.create(g, setup, version); err != nil {
		return nil, err
	}
	if err := inst.loadInstanceFuncs(); err != nil {
		return nil, err
	}
	if setup.dbgInfo != nil {
		if err := inst.startMessenger(setup.dbgInfo); err != nil {
			return nil, err
		}
	}
	return inst, nil
}

// instanceLoader finds the Vulkan loader and its global functions, and the instance version it
// supports, which must be 1.1 or later.
func instanceLoader() (*loader, globalFuncs, uint32, error) {
	var g globalFuncs
	ld, err := getLoader()
	if err != nil {
		return nil, g, 0, err
	}
	loadFuncs(&g, func(name string) uintptr { return ld.procAddr(0, name) })
	if g.CreateInstance == 0 {
		return nil, g, 0, fmt.Errorf("vk: loader %s has no vkCreateInstance", ld.name)
	}
	version := apiVersion(1, 0, 0)
	if g.EnumerateInstanceVersion != 0 {
		call(g.EnumerateInstanceVersion, uintptr(unsafe.Pointer(&version)))
	}
	if version < apiVersion(1, 1, 0) {
		return nil, g, 0, fmt.Errorf("vk: loader %s supports Vulkan %s; vkgrad needs 1.1 or later", ld.name, versionString(version))
	}
	return ld, g, version, nil
}

// instanceSetup is what vkCreateInstance is asked for beyond the application: layers,
// extensions and flags, and with validation the messenger and features chained to it.
type instanceSetup struct {
	layers, exts []string
	flags        uint32
	dbgInfo      *debugUtilsMessengerCreateInfoEXT
	features     *validationFeaturesEXT
	syncFeature  uint32 // the array features points at
}

// portabilitySetup enables portability enumeration where the loader has it, so that it lists
// MoltenVK, a portability (not fully conformant) driver.
func portabilitySetup(exts map[string]bool) *instanceSetup {
	s := &instanceSetup{}
	if exts["VK_KHR_portability_enumeration"] {
		s.exts = append(s.exts, "VK_KHR_portability_enumeration")
		s.flags |= instanceCreateEnumeratePortability
	}
	return s
}

// addValidation enables the validation layer and debug utils, failing where either is missing,
// and synchronization validation where the layer offers it.
func (s *instanceSetup) addValidation(g globalFuncs, exts map[string]bool) error {
	layers, err := instanceLayers(g)
	if err != nil {
		return err
	}
	if !layers[validationLayer] {
		return fmt.Errorf("vk: VKGRAD_VALIDATION asks for %s, which is not installed", validationLayer)
	}
	if !exts["VK_EXT_debug_utils"] {
		return fmt.Errorf("vk: validation needs instance extension VK_EXT_debug_utils, which the loader lacks")
	}
	s.layers = append(s.layers, validationLayer)
	s.exts = append(s.exts, "VK_EXT_debug_utils")
	if layerExts, err := instanceExtensions(g, validationLayer); err == nil && layerExts["VK_EXT_validation_features"] {
		// Synchronization validation also reports missing barriers between dispatches.
		s.exts = append(s.exts, "VK_EXT_validation_features")
		s.syncFeature = validationFeatureEnableSync
		s.features = &validationFeaturesEXT{
			SType:                         stValidationFeaturesEXT,
			EnabledValidationFeatureCount: 1,
			PEnabledValidationFeatures:    unsafe.Pointer(&s.syncFeature),
		}
	}
	return nil
}

// messengerInfo gives the instance a message log and describes a messenger writing to it.
func (i *Instance) messengerInfo() *debugUtilsMessengerCreateInfoEXT {
	debugCallbackOnce.Do(func() { debugCallbackPtr = newCallback(debugCallback) })
	i.log = &messageLog{}
	i.logID = nextLogID.Add(1)
	messageLogs.Store(i.logID, i.log)
	return &debugUtilsMessengerCreateInfoEXT{
		SType:           stDebugUtilsMessengerCreateInfoEXT,
		MessageSeverity: debugSeverityWarning | debugSeverityError,
		MessageType:     debugTypeGeneral | debugTypeValidation | debugTypePerformance,
		PfnUserCallback: debugCallbackPtr,
		PUserData:       i.logID,
	}
}

// create calls vkCreateInstance for API 1.2 where the loader supports it, else 1.1.
func (i *Instance) create(g globalFuncs, s *instanceSetup, version uint32) error {
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
	layerPtrs, layerKeep := cstrArray(s.layers)
	extPtrs, extKeep := cstrArray(s.exts)
	ci := &instanceCreateInfo{
		SType:                   stInstanceCreateInfo,
		Flags:                   s.flags,
		PApplicationInfo:        unsafe.Pointer(app),
		EnabledLayerCount:       uint32(len(s.layers)),
		PpEnabledLayerNames:     layerPtrs,
		EnabledExtensionCount:   uint32(len(s.exts)),
		PpEnabledExtensionNames: extPtrs,
	}
	ci.PNext = s.chain()
	if r := call(g.CreateInstance, uintptr(unsafe.Pointer(ci)), 0, uintptr(unsafe.Pointer(&i.handle))); r != success {
		i.dropLog()
		if r == errIncompatibleDriver {
			if why := diagnoseDrivers(os.Getenv); why != "" {
				return fmt.Errorf("%w: the loader found no compatible driver (%v): %s", ErrNoDevice, check("vkCreateInstance", r), why)
			}
			return fmt.Errorf("%w: the loader found no compatible driver (%v)", ErrNoDevice, check("vkCreateInstance", r))
		}
		return check("vkCreateInstance", r)
	}
	runtime.KeepAlive(layerKeep)
	runtime.KeepAlive(extKeep)
	runtime.KeepAlive(appName)
	runtime.KeepAlive(s)
	i.version = app.ApiVersion
	return nil
}

// chain is the create info's pNext: the messenger, so that messages from vkCreateInstance
// itself are caught too, behind the validation features where there are some.
func (s *instanceSetup) chain() unsafe.Pointer {
	if s.dbgInfo == nil {
		return nil
	}
	if s.features == nil {
		return unsafe.Pointer(s.dbgInfo)
	}
	s.features.PNext = unsafe.Pointer(s.dbgInfo)
	return unsafe.Pointer(s.features)
}

// loadInstanceFuncs resolves the instance's functions, closing it when one is missing.
func (i *Instance) loadInstanceFuncs() error {
	if missing := loadFuncs(&i.fn, func(name string) uintptr { return i.ld.procAddr(i.handle, name) }); len(missing) > 0 {
		i.Close()
		return fmt.Errorf("vk: loader %s lacks %v", i.ld.name, missing)
	}
	return nil
}

// startMessenger creates the debug messenger described by info, closing the instance on failure.
func (i *Instance) startMessenger(info *debugUtilsMessengerCreateInfoEXT) error {
	loadFuncs(&i.dbg, func(name string) uintptr { return i.ld.procAddr(i.handle, name) })
	if i.dbg.CreateDebugUtilsMessengerEXT == 0 {
		i.Close()
		return fmt.Errorf("vk: vkCreateDebugUtilsMessengerEXT missing although VK_EXT_debug_utils is enabled")
	}
	if err := check("vkCreateDebugUtilsMessengerEXT", call(i.dbg.CreateDebugUtilsMessengerEXT, i.handle,
		uintptr(unsafe.Pointer(info)), 0, uintptr(unsafe.Pointer(&i.messenger)))); err != nil {
		i.Close()
		return err
	}
	return nil
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

// OnValidationMessage passes every later validation message to f as it arrives, besides
// keeping it for ValidationMessages: a program can then show a message before whatever
// follows it (a device loss, a wrong result). Without validation it does nothing. f may be
// called from a driver thread.
func (i *Instance) OnValidationMessage(f func(msg string)) {
	if i.log == nil {
		return
	}
	i.log.mu.Lock()
	i.log.notify = f
	i.log.mu.Unlock()
}

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
