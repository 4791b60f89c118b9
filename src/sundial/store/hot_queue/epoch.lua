-- The epoch in force on this server, or false when it has none for the server it now is.
return current_epoch() or false
