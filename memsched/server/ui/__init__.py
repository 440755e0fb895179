"""The debug UI at /ui: users, sessions, the timeline of turns, each turn's trace as the pipeline it
went through, and a user's profile, bookmarks and jobs."""

from memsched.server.ui.routes import ui_routes

__all__ = ["ui_routes"]
