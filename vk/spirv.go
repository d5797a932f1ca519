package vk

import (
	"encoding/binary"
	"fmt"
)

// What a compiled shader says about its bindings, read from its SPIR-V: which storage buffers
// it may write. A dispatch must mark those arguments written, since the barriers between
// dispatches follow the marks: a GPU runs dispatches without a barrier between them at once,
// so a write marked as a read races with the next dispatch (lavapipe runs them one after
// another and hides it).

// spirvInstructions calls f with the opcode and operand words of each instruction of a
// SPIR-V module.
func spirvInstructions(spv []byte, f func(op uint32, args []uint32)) error {
	if len(spv)%4 != 0 || len(spv) < 20 || binary.LittleEndian.Uint32(spv) != 0x07230203 {
		return fmt.Errorf("not little-endian SPIR-V")
	}
	words := make([]uint32, len(spv)/4)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(spv[4*i:])
	}
	for i := 5; i < len(words); {
		op, n := words[i]&0xffff, int(words[i]>>16)
		if n == 0 || i+n > len(words) {
			return fmt.Errorf("instruction at word %d runs past the end", i)
		}
		f(op, words[i+1:i+n])
		i += n
	}
	return nil
}

// writableBindings is the set of bindings, bit i for binding i, whose storage buffer the
// shader may write: a storage buffer (SPIR-V 1.3's Uniform BufferBlock or StorageBuffer)
// decorated NonWritable neither itself nor on every member of its block.
func writableBindings(spv []byte) (uint32, error) {
	const (
		opTypeStruct, opTypePointer, opVariable, opDecorate, opMemberDecorate = 30, 32, 59, 71, 72
		decorationBufferBlock, decorationBinding, decorationNonWritable       = 3, 33, 24
		storageUniform, storageStorageBuffer                                  = 2, 12
	)
	members := map[uint32]int{}         // struct type -> member count
	readonlyMembers := map[uint32]int{} // struct type -> members decorated NonWritable
	pointee := map[uint32]uint32{}      // pointer type -> pointed-to type
	binding := map[uint32]uint32{}      // variable -> binding
	readonlyVars := map[uint32]bool{}
	varType := map[uint32]uint32{} // buffer variable -> its pointer type
	bufferBlocks := map[uint32]bool{}
	storageClass := map[uint32]uint32{}
	err := spirvInstructions(spv, func(op uint32, a []uint32) {
		switch {
		case op == opTypeStruct && len(a) >= 1:
			members[a[0]] = len(a) - 1
		case op == opTypePointer && len(a) >= 3:
			pointee[a[0]] = a[2]
		case op == opVariable && len(a) >= 3 && (a[2] == storageUniform || a[2] == storageStorageBuffer):
			varType[a[1]], storageClass[a[1]] = a[0], a[2]
		case op == opDecorate && len(a) >= 2 && a[1] == decorationBufferBlock:
			bufferBlocks[a[0]] = true
		case op == opDecorate && len(a) >= 3 && a[1] == decorationBinding:
			binding[a[0]] = a[2]
		case op == opDecorate && len(a) >= 2 && a[1] == decorationNonWritable:
			readonlyVars[a[0]] = true
		case op == opMemberDecorate && len(a) >= 3 && a[2] == decorationNonWritable:
			readonlyMembers[a[0]]++
		}
	})
	if err != nil {
		return 0, err
	}
	var mask uint32
	for v, ptr := range varType {
		b, ok := binding[v]
		if !ok || b >= 32 || readonlyVars[v] {
			continue
		}
		block := pointee[ptr]
		if storageClass[v] == storageUniform && !bufferBlocks[block] {
			continue // a uniform buffer, which shaders cannot write
		}
		if n := members[block]; n == 0 || readonlyMembers[block] < n {
			mask |= 1 << b
		}
	}
	return mask, nil
}
