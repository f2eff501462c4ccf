package io.sluice.core.mcp;

import org.jspecify.annotations.Nullable;

/**
 * What MCP admission notes of a request it answered itself: the tool's metric label (null: no tool
 * call) and the reason its JSON-RPC error gives.
 */
public record McpNote(@Nullable String tool, String reason) {}
