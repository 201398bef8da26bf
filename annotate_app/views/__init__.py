"""The app's pages (Streamlit scripts run by ``st.navigation`` from ``annotate_app/app.py``)."""
