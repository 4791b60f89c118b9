"""Run Argo CD resource customizations the way Argo CD runs them from ``argocd-cm``.

Without ``useOpenLibs`` Argo CD's Lua VM (gopher-lua, Lua 5.1) opens only the base, table and
package libraries and a safe ``os`` holding ``time`` and ``date`` (``require("os")`` returns
it). ``LuaSandbox`` gives each script exactly that global environment on a Lua 5.1 from lupa,
and removes the string metatable, so ``string.format(...)`` and ``("x"):upper()`` fail here as
they fail in Argo CD. The object is the global ``obj``, as Argo CD sets it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lupa import lua51

_SANDBOX = """
local base = {
  "assert", "collectgarbage", "dofile", "error", "getfenv", "getmetatable", "ipairs", "load",
  "loadfile", "loadstring", "module", "next", "pairs", "pcall", "print", "rawequal", "rawget",
  "rawset", "select", "setfenv", "setmetatable", "tonumber", "tostring", "type", "unpack",
  "xpcall", "newproxy", "_VERSION",
}
local safe_os = {time = os.time, date = os.date}
local table_library = {}
for name, value in pairs(table) do table_library[name] = value end
local host_setfenv, host_loadstring, host_error = setfenv, loadstring, error
-- Strings get no methods: without the string library gopher-lua sets no string metatable.
debug.setmetatable("", nil)
return function(code, chunk_name, object)
  local env = {}
  for _, name in ipairs(base) do env[name] = _G[name] end
  env.table = table_library
  env.os = safe_os
  env.package = {loaded = {os = safe_os, table = table_library}, preload = {}}
  env.require = function(module_name)
    local loaded = env.package.loaded[module_name]
    if loaded == nil then host_error("module " .. tostring(module_name) .. " not found", 2) end
    return loaded
  end
  env._G = env
  env.obj = object
  local chunk, problem = host_loadstring(code, "=" .. chunk_name)
  if chunk == nil then host_error(problem, 0) end
  host_setfenv(chunk, env)
  return chunk()
end
"""


class LuaScriptError(Exception):
    """A script raised or did not compile: the Lua message, with the script's name."""


class LuaSandbox:
    def __init__(self) -> None:
        self._lua = lua51.LuaRuntime(register_eval=False, register_builtins=False)
        self._run = self._lua.execute(_SANDBOX)
        self._pcall = self._lua.eval("pcall")

    def run(self, code: str, name: str, obj: Mapping[str, Any]) -> Any:
        """What the script returns for ``obj``, as Python values (tables -> dicts or lists)."""
        ok, result = self._pcall(self._run, code, name, self._to_lua(obj))
        if not ok:
            raise LuaScriptError(f"{name}: {result}")
        return _to_python(result)

    def _to_lua(self, value: Any) -> Any:
        if isinstance(value, Mapping):
            return self._lua.table_from(
                {k: self._to_lua(v) for k, v in value.items() if v is not None}
            )
        if isinstance(value, list):
            return self._lua.table_from([self._to_lua(v) for v in value])
        return value


def _to_python(value: Any) -> Any:
    if lua51.lua_type(value) != "table":
        return value
    items = {key: _to_python(item) for key, item in value.items()}
    if (
        items
        and all(isinstance(key, int) for key in items)
        and sorted(items) == list(range(1, len(items) + 1))
    ):
        return [items[index] for index in range(1, len(items) + 1)]
    return items
