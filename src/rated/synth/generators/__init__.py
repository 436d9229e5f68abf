"""Query generators: an OpenAI-compatible endpoint, or SmolLM2 embedded (``synth`` extra)."""

from rated.synth.generators.base import Generator, Job
from rated.synth.generators.local import LocalGenerator, smollm2_weights
from rated.synth.generators.openai_compat import OpenAICompatGenerator

__all__ = ["Generator", "Job", "LocalGenerator", "OpenAICompatGenerator", "smollm2_weights"]
