"""The web console: `kafpy console`, a Kafka client serving a small web app.

It reads any Kafka-protocol cluster through kafpy's own client (kafpy.client) and shows
brokers, topics, partitions, consumer groups and a message browser as server-rendered
pages (aiohttp + jinja2, autoescaped) over a JSON API of its own. Writes (creating and
deleting topics, resetting a group's offsets) are refused unless started with
--allow-writes.
"""

from kafpy.common.extras import require_extra

require_extra("console", "kafpy's web console (kafpy.console)")
