"""The Textual console: app, screens, widgets. Everything else in kconsole runs without it."""
