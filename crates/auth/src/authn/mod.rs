//! Authentication: recognising the user behind a request.
