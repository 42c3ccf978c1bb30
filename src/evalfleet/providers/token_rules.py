"""How many prompt tokens a request will cost, estimated from its neutral parts without calling
anyone: what `evalfleet run --estimate` and the budget cap use.

Each rule is the provider's own documented one where it could be found (sources are quoted
next to each rule). Where a rule could not be confirmed, the comment says so and the value
chosen errs high. Estimates leave out the few tokens of message framing a provider adds.

- Text: 4 characters per token, the figure both OpenAI ("one token generally corresponds to
  ~4 characters of text for common English text", help.openai.com "What are tokens and how to
  count them?") and Google ("For Gemini models, a token is equivalent to about 4 characters",
  https://ai.google.dev/gemini-api/docs/tokens) give; Anthropic documents none, and the same
  figure is used. Characters outside ASCII count one token each (CJK text runs near one
  token per character; 4 per token would understate it). Claude Opus 4.7 and later use a new
  tokenizer said to take up to 35 % more tokens for the same text (secondary sources only, not
  confirmed in Anthropic's docs): their text estimate is multiplied by 1.35.
- Images: read the size from the bytes (PIL reads the header only) and apply the rule of the
  provider and model (functions below). An image PIL cannot read counts as 2048 x 2048.
- Audio: seconds (WAV header, MP3 frame header, else bytes at 128 kbit/s) times the provider's
  tokens per second.

`estimate_prompt_tokens` is called once per sample and model: image sizes are cached by the
bytes' hash, so a sample's images are opened once whatever the number of models.
"""

from __future__ import annotations

import io
import math
import re
import struct
import wave
from collections.abc import Sequence

from PIL import Image

from evalfleet.core.types import Part
from evalfleet.providers.registry import ModelConfig

CHARS_PER_TOKEN = 4
UNREADABLE_IMAGE = (2048, 2048)  # a size PIL cannot read: counted as a large image

# --- OpenAI ---------------------------------------------------------------------------------
# https://platform.openai.com/docs/guides/images-vision#calculating-costs (quoted in
# https://v2ex.com/amp/t/1044688 and by the vision guide's mirror at
# openai-hd4n6.mintlify.app/docs/guides/images): "detail: high images are first scaled to fit
# within a 2048 x 2048 square, maintaining their aspect ratio. Then, they are scaled such that
# the shortest side of the image is 768px long. Finally, we count how many 512px squares the
# image consists of. Each of those squares costs 170 tokens. Another 85 tokens are always added
# to the final total." Worked examples there: 1024 x 1024 -> 765, 2048 x 4096 -> 1105. An image
# whose shortest side is under 768 px is not scaled up (measured: a 128 x 64 image bills one
# tile on gpt-4o, community.openai.com/t/.../1262691). We send no `detail`, so "auto" applies;
# counting it as "high" errs high.
OPENAI_TILE = (85, 170)  # gpt-4o, gpt-4o-audio, gpt-4.1, gpt-4.5: base, per tile
# (api model prefix, base, per tile): longest prefix first. gpt-4o-mini's 2833 / 5667 and o1/o3's
# 75 / 150 are from the same guide's table and match the billing measured on
# community.openai.com/t/vision-more-than-one-way-to-send-a-request/1262691 (gpt-4o-mini: 8512
# tokens for a one-tile image with 12 text tokens). GPT-5's 70 / 140 could not be confirmed
# through search: it keeps the gpt-4o figures, which are higher.
OPENAI_TILE_MODELS = (
    ("gpt-4o-mini", 2833, 5667),
    ("o1", 75, 150),
    ("o3", 75, 150),
)
# The patch rule (same guide): "Calculate how many 32px x 32px patches are needed to cover the
# image"; above 1536 patches the image is scaled down to fit (shrink factor
# sqrt(32^2 x 1536 / (w x h)), then adjusted so whole patches fit); tokens = patches x a
# multiplier per model. Worked example there: 1800 x 2400 -> 1452 patches. Multipliers: the
# guide's 1.62 (gpt-5-mini, gpt-4.1-mini), 2.46 (gpt-5-nano, gpt-4.1-nano), 1.72 (o4-mini).
# Billing measured for gpt-5-mini is 1.20 per patch (community.openai.com/t/.../1344040): the
# documented, higher multipliers are kept.
OPENAI_PATCH_CAP = 1536
OPENAI_PATCH_MODELS = (
    ("gpt-5-mini", 1.62),
    ("gpt-5-nano", 2.46),
    ("gpt-4.1-mini", 1.62),
    ("gpt-4.1-nano", 2.46),
    ("o4-mini", 1.72),
)
# Audio: "Audio tokens in user messages are 1 token per 100 ms of audio"
# (https://developers.openai.com/api/docs/guides/realtime-costs). That page is about the
# Realtime API; Chat Completions audio input (gpt-4o-audio) is assumed to tokenize the same.
# Note: gpt-4o-audio bills audio tokens at $40/M, not the text price the registry holds, so
# audio-heavy estimates on it are low (the registry has no audio price).
OPENAI_AUDIO_TOKENS_PER_S = 10

# --- Anthropic ------------------------------------------------------------------------------
# https://docs.claude.com/en/docs/build-with-claude/vision: "tokens = (width px * height px)/750";
# "If your image's long edge is more than 1568 pixels, or your image is more than ~1,600 tokens,
# it will first be scaled down, preserving aspect ratio, until it's within the size limits"
# (the page's table: 1092 x 1092 -> about 1590 tokens). Claude Opus 4.7 and later read images up
# to about 2576 px on the long edge and 4784 tokens (secondary sources, e.g.
# github.com/vercel-labs/agent-browser/discussions/2318; not confirmed in Anthropic's docs):
# used for those models, as it errs high.
ANTHROPIC_PX_PER_TOKEN = 750
ANTHROPIC_LIMITS = (1568, 1600)  # long edge px, tokens
ANTHROPIC_HIGH_RES_LIMITS = (2576, 4784)
ANTHROPIC_NEW_TOKENIZER = re.compile(
    r"^claude-(?:opus-4-(?:[7-9]|\d\d)|(?:opus|sonnet|haiku)-[5-9])"
)
ANTHROPIC_TEXT_FACTOR = 1.35  # Opus 4.7+ tokenizer: "up to +35 %" (secondary, conservative)

# --- Google ---------------------------------------------------------------------------------
# https://ai.google.dev/gemini-api/docs/tokens (as quoted in geminibyexample.com/027): "image
# inputs with both dimensions <=384 pixels are counted as 258 tokens. Images larger in one or
# both dimensions are cropped and scaled as needed into tiles of 768x768 pixels, each counted
# as 258 tokens." The tile count is taken as ceil(w / 768) x ceil(h / 768) (the docs do not
# say how cropping rounds; this errs high).
GEMINI_SMALL_SIDE = 384
GEMINI_TILE_PX = 768
GEMINI_TILE_TOKENS = 258
# Gemini 3 sizes images by `media_resolution` instead; unset, images get MEDIA_RESOLUTION_HIGH,
# 1120 tokens (https://ai.google.dev/gemini-api/docs/media-resolution "Token counts"; the
# figure itself was confirmed only in secondary sources, e.g. fastgptplus.com's guide to
# gemini-3-pro media_resolution). Our client sets no media_resolution.
GEMINI_3_IMAGE_TOKENS = 1120
# "Gemini represents each second of audio as 32 tokens; for example, one minute of audio is
# represented as 1,920 tokens" (https://ai.google.dev/gemini-api/docs/tokens, quoted on
# discuss.ai.google.dev/t/84379).
GEMINI_AUDIO_TOKENS_PER_S = 32

# --- OpenAI-compatible servers (vLLM, SGLang) -------------------------------------------------
# What an image costs depends on the served model; none is documented for the protocol. Qwen2-VL
# style encoders take one token per 28 x 28 px (784 px², huggingface.co/Qwen/Qwen2-VL-7B-
# Instruct/discussions/47): we count one token per 750 px² and no downscaling, which errs high.
# Audio: 32 tokens per second, the highest documented rate above.
COMPATIBLE_PX_PER_TOKEN = 750
GENERIC_AUDIO_TOKENS_PER_S = 32

# Audio whose duration cannot be read from its header: bytes at 128 kbit/s (16,000 bytes per
# second), the common MP3 rate. Lower-bitrate files are underestimated.
FALLBACK_AUDIO_BYTES_PER_S = 16_000

_sizes: dict[tuple[int, int], tuple[int, int]] = {}
_SIZE_CACHE_MAX = 1 << 16


def estimate_prompt_tokens(config: ModelConfig, parts: Sequence[Part]) -> int:
    """Prompt tokens `config`'s provider will count for `parts` (text, images, audio)."""
    total = 0
    for part in parts:
        if part.kind == "text":
            total += text_tokens(config, part.text or "")
        elif part.kind == "image" and part.data is not None:
            width, height = image_size(part.data)
            total += image_tokens(config, width, height)
        elif part.kind == "audio" and part.data is not None:
            seconds = audio_seconds(part.data, part.media_type)
            total += math.ceil(seconds * audio_tokens_per_second(config))
    return total


# --- text ------------------------------------------------------------------------------------


def text_tokens(config: ModelConfig, text: str) -> int:
    """4 ASCII characters per token, one token per other character (see the module notes)."""
    if not text:
        return 0
    ascii_chars = len(text) if text.isascii() else len(text.encode("ascii", "ignore"))
    tokens = math.ceil(ascii_chars / CHARS_PER_TOKEN) + (len(text) - ascii_chars)
    if config.provider == "anthropic" and ANTHROPIC_NEW_TOKENIZER.match(config.api_model):
        tokens = math.ceil(tokens * ANTHROPIC_TEXT_FACTOR)
    return tokens


# --- images ----------------------------------------------------------------------------------


def image_size(data: bytes) -> tuple[int, int]:
    """(width, height) from the image header, without decoding the pixels."""
    key = (hash(data), len(data))  # a bytes object computes its hash once
    size = _sizes.get(key)
    if size is None:
        try:
            with Image.open(io.BytesIO(data)) as image:
                size = image.size
        except Exception:  # noqa: BLE001  (any undecodable image: counted large)
            size = UNREADABLE_IMAGE
        if len(_sizes) >= _SIZE_CACHE_MAX:
            _sizes.clear()
        _sizes[key] = size
    return size


def image_tokens(config: ModelConfig, width: int, height: int) -> int:
    """Tokens of one image of this size for this model (rules and sources above)."""
    if width <= 0 or height <= 0:
        return 0
    model = config.api_model
    if config.provider == "openai":
        for prefix, multiplier in OPENAI_PATCH_MODELS:
            if model.startswith(prefix):
                return openai_patch_tokens(width, height, multiplier)
        base, tile = OPENAI_TILE
        for prefix, model_base, model_tile in OPENAI_TILE_MODELS:
            if model == prefix or model.startswith(prefix + "-"):
                base, tile = model_base, model_tile
                break
        return openai_tile_tokens(width, height, base, tile)
    if config.provider == "anthropic":
        limits = ANTHROPIC_LIMITS
        if ANTHROPIC_NEW_TOKENIZER.match(model):
            limits = ANTHROPIC_HIGH_RES_LIMITS
        return anthropic_image_tokens(width, height, *limits)
    if config.provider == "google":
        if model.startswith("gemini-3"):
            return GEMINI_3_IMAGE_TOKENS
        return gemini_image_tokens(width, height)
    return math.ceil(width * height / COMPATIBLE_PX_PER_TOKEN)


def openai_tile_tokens(width: int, height: int, base: int = 85, tile: int = 170) -> int:
    """OpenAI's 512-px tile rule: fit in 2048 x 2048, shortest side down to 768, count tiles."""
    if width > 2048 or height > 2048:
        if width >= height:
            width, height = 2048, max(1, height * 2048 // width)
        else:
            width, height = max(1, width * 2048 // height), 2048
    shortest = min(width, height)
    if shortest > 768:
        width, height = width * 768 // shortest, height * 768 // shortest
    return base + tile * math.ceil(width / 512) * math.ceil(height / 512)


def openai_patch_tokens(width: int, height: int, multiplier: float) -> int:
    """OpenAI's 32-px patch rule, capped at 1536 patches, times the model's multiplier."""
    patches = math.ceil(width / 32) * math.ceil(height / 32)
    if patches > OPENAI_PATCH_CAP:
        shrink = math.sqrt(32 * 32 * OPENAI_PATCH_CAP / (width * height))
        across, down = width * shrink / 32, height * shrink / 32
        shrink *= min(math.floor(across) / across, math.floor(down) / down)
        # the adjusted sizes land on whole patches: drop float noise before rounding up
        patches = _ceil(width * shrink / 32) * _ceil(height * shrink / 32)
        patches = min(patches, OPENAI_PATCH_CAP)
    return math.ceil(patches * multiplier - 1e-9)


def _ceil(value: float) -> int:
    return math.ceil(value - 1e-9)


def anthropic_image_tokens(
    width: int, height: int, long_edge: int = 1568, max_tokens: int = 1600
) -> int:
    """Anthropic: width x height / 750 after scaling down to the long-edge and token limits."""
    scale = min(
        1.0,
        long_edge / max(width, height),
        math.sqrt(max_tokens * ANTHROPIC_PX_PER_TOKEN / (width * height)),
    )
    if scale < 1.0:
        width, height = max(1, int(width * scale)), max(1, int(height * scale))
    return int(width * height / ANTHROPIC_PX_PER_TOKEN + 0.5)


def gemini_image_tokens(width: int, height: int) -> int:
    """Gemini 2.x: 258 tokens up to 384 x 384, else 258 per 768 x 768 tile."""
    if width <= GEMINI_SMALL_SIDE and height <= GEMINI_SMALL_SIDE:
        return GEMINI_TILE_TOKENS
    tiles = math.ceil(width / GEMINI_TILE_PX) * math.ceil(height / GEMINI_TILE_PX)
    return GEMINI_TILE_TOKENS * tiles


# --- audio -----------------------------------------------------------------------------------


def audio_tokens_per_second(config: ModelConfig) -> int:
    if config.provider == "google":
        return GEMINI_AUDIO_TOKENS_PER_S
    if config.provider == "openai":
        return OPENAI_AUDIO_TOKENS_PER_S
    return GENERIC_AUDIO_TOKENS_PER_S


def audio_seconds(data: bytes, media_type: str | None = None) -> float:
    """Duration from the WAV header (`wave`, else the RIFF byte rate), the first MP3 frame's
    bit rate, else the bytes at 128 kbit/s."""
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        seconds = _wav_seconds(data)
        if seconds is not None:
            return seconds
    else:
        bitrate = _mp3_bitrate(data)
        if bitrate:
            return len(data) * 8 / bitrate
    return len(data) / FALLBACK_AUDIO_BYTES_PER_S


def _wav_seconds(data: bytes) -> float | None:
    try:
        with wave.open(io.BytesIO(data)) as wav:
            rate = wav.getframerate()
            return wav.getnframes() / rate if rate else None
    except (wave.Error, EOFError, struct.error):
        pass
    # A format `wave` refuses (WAVE_FORMAT_EXTENSIBLE, float): the fmt chunk's byte rate.
    pos, byte_rate, data_size = 12, 0, None
    while pos + 8 <= len(data):
        chunk, size = data[pos : pos + 4], struct.unpack("<I", data[pos + 4 : pos + 8])[0]
        if chunk == b"fmt " and size >= 12:
            byte_rate = struct.unpack("<I", data[pos + 16 : pos + 20])[0]
        elif chunk == b"data":
            data_size = min(size, len(data) - pos - 8)
            break
        pos += 8 + size + (size & 1)
    if byte_rate and data_size is not None:
        return data_size / byte_rate
    return None


# kbit/s by bit-rate index: MPEG-1 Layer III, and MPEG-2/2.5 Layer III
_MP3_RATES = {
    3: (0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320),
    2: (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
}


def _mp3_bitrate(data: bytes) -> int | None:
    """Bits per second from the first MPEG Layer III frame header (after any ID3v2 tag)."""
    pos = 0
    if data[:3] == b"ID3" and len(data) >= 10:
        size = data[6:10]
        pos = 10 + (
            (size[0] & 0x7F) << 21 | (size[1] & 0x7F) << 14 | (size[2] & 0x7F) << 7 | size[3]
        )
    end = min(len(data) - 4, pos + 4096)
    while pos <= end:
        if data[pos] == 0xFF and data[pos + 1] & 0xE0 == 0xE0:
            version = (data[pos + 1] >> 3) & 0x3  # 3: MPEG-1, 2: MPEG-2, 0: MPEG-2.5
            layer = (data[pos + 1] >> 1) & 0x3  # 1: Layer III
            index = data[pos + 2] >> 4
            if layer == 1 and version != 1 and 0 < index < 15:
                return _MP3_RATES[3 if version == 3 else 2][index] * 1000
        pos += 1
    return None
