package main

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
)

// redPixelPNG is a 1x1 red PNG image, the image the scenarios ask for.
var redPixelPNG = func() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	return b.Bytes()
}()

// silentWAV is a valid RIFF/WAVE file: 8 kHz, 16-bit mono, 10 ms of silence.
var silentWAV = func() []byte {
	const (
		sampleRate    = 8000
		bitsPerSample = 16
		channels      = 1
		samples       = sampleRate / 100
		dataSize      = samples * channels * bitsPerSample / 8
	)
	var b bytes.Buffer
	le := func(v any) {
		if err := binary.Write(&b, binary.LittleEndian, v); err != nil {
			panic(err)
		}
	}
	b.WriteString("RIFF")
	le(uint32(36 + dataSize))
	b.WriteString("WAVE")
	b.WriteString("fmt ")
	le(uint32(16))
	le(uint16(1)) // PCM
	le(uint16(channels))
	le(uint32(sampleRate))
	le(uint32(sampleRate * channels * bitsPerSample / 8))
	le(uint16(channels * bitsPerSample / 8))
	le(uint16(bitsPerSample))
	b.WriteString("data")
	le(uint32(dataSize))
	b.Write(make([]byte, dataSize))
	return b.Bytes()
}()
