"""The HTTP service (`memsched serve`)."""

from memsched.server.app import Service, create_app

__all__ = ["Service", "create_app"]
