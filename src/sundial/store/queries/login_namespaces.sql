-- The namespaces the session's login is kept to (NULL: not kept), migration 0300, and the
-- login, for the message that says what to change.
SELECT sundial_login_namespaces(), session_user
