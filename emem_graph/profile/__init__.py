"""User-profile memory: users' personal facts and routines as a knowledge graph grounded in the
robot's entities, and the user_profile tool. See UserProfile (capability.py)."""

from emem_graph.profile import schemas as _schemas  # noqa: F401  (registers user_profile)
from emem_graph.profile.capability import UserProfile
from emem_graph.profile.models import (
    Instruction,
    LocationSpec,
    ObjectSpec,
    ProfileHit,
    ProfileUpdate,
    StepSpec,
)

__all__ = [
    "Instruction",
    "LocationSpec",
    "ObjectSpec",
    "ProfileHit",
    "ProfileUpdate",
    "StepSpec",
    "UserProfile",
]
