/** MCP-aware admission's module: its section, body router and listener in one place. */
@NullMarked
package io.sluice.feature.mcp;

import org.jspecify.annotations.NullMarked;
