package device

import "github.com/rs/zerolog"

// validationSource is a Vulkan instance's validation layer (vk.Instance).
type validationSource interface {
	Validation() bool
	OnValidationMessage(func(msg string))
}

// logValidation logs each message of the validation layer, when VKGRAD_VALIDATION=1 turned
// it on, as a warning as it arrives, so that it shows before whatever it explains.
func logValidation(src validationSource, log zerolog.Logger) {
	if !src.Validation() {
		return
	}
	log.Info().Msg("Vulkan validation layer on (VKGRAD_VALIDATION=1): its messages follow as warnings")
	src.OnValidationMessage(func(msg string) { log.Warn().Str("layer", "validation").Msg(msg) })
}
