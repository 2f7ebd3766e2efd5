//! Authorization: deciding whether a user may perform a request.
