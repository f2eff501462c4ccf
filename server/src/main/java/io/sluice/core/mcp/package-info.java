/**
 * MCP-aware admission: the JSON-RPC 2.0 body of an MCP route (one message or a batch) is read in
 * place ({@link io.sluice.core.mcp.JsonRpcScan}); a {@code tools/call} is decided in the pool its
 * tool maps to ({@link io.sluice.core.mcp.McpRouter}, by exact name, glob or MCP server), every
 * other message in the route's own pool; a refusal is a JSON-RPC error the client's MCP SDK reads
 * ({@link io.sluice.core.mcp.JsonRpcErrors}). Plain Java.
 */
@NullMarked
package io.sluice.core.mcp;

import org.jspecify.annotations.NullMarked;
