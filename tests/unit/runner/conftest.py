from __future__ import annotations

import handlers.sample_jobs  # noqa: F401  (registers the sample handlers)
